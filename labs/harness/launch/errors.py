"""The exceptions a launch raises, and the diagnosis that picks one.

    LaunchError   launch() was called in a way that cannot run (the function, world_size,
                  args or timeout): raised before any worker starts, says what to do instead
    WorkerError   a rank raised, or died (signal, os._exit, gloo abort)
    HangError     the ranks stopped making progress: the launch deadline passed, or
                  gloo's own timeout fired inside the workers (a TimeoutError)
    Interrupted   you interrupted the kernel during a launch (a KeyboardInterrupt)

Each reads like a compiler error: every distinct cause once, with the ranks that share
it, your own code's frames first, the harness's frames left out. Everything else is one
attribute away (`.tracebacks`, `.outputs`, `.statuses`, `.trace`). In IPython the
exception shows only its message (`_render_traceback_`), not the launcher's frames.
"""
from __future__ import annotations

import re
import signal
import sys

from labs.harness.launch.messages import Hang, describe_statuses
from labs.harness.launch.output import abort_lines
from labs.harness.ranks.gloo_text import short_locations
from labs.harness.launch.spec import JOIN_TIMEOUT

_GLOO_TIMEOUT = re.compile(r"[Tt]imed out|timeout caused pair closure|Timeout")
_COLLATERAL = re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe")


class _Readable:
    """What IPython shows for the exception: its name and message, no launcher frames."""

    def _render_traceback_(self):
        name = f"\x1b[0;31m{type(self).__name__}\x1b[0m"
        return f"{name}: {self}".splitlines()


class LaunchError(_Readable, TypeError, ValueError):
    """launch() cannot start this: a function workers cannot import (defined in the
    notebook, a lambda), a bad world_size, args that cannot be pickled, a bad timeout.
    Both a TypeError and a ValueError, so either `except` catches it."""


class WorkerError(_Readable, RuntimeError):
    """One or more workers raised or died.

    `.ranks` (the ranks that failed first), `.causes` (rank -> "ValueError: ..." or
    "was killed by signal SIGABRT"), `.tracebacks` (rank -> text), `.statuses` (rank ->
    RankStatus), `.outputs` (rank -> what it printed), `.trace` (the calls each rank made),
    `.unsolved` (rank -> labs.harness.ranks.exercises.Unsolved, for the ranks among `.ranks` that
    stopped at an exercise's stub: data, not a sentence to parse), `.messages` (rank -> the
    whole message of what it raised; `.causes` holds its first line).
    """

    def __init__(self, message, ranks=(), tracebacks=None, statuses=None, causes=None,
                 unsolved=None, messages=None):
        super().__init__(message)
        self.ranks = list(ranks)
        self.tracebacks = tracebacks or {}
        self.statuses = statuses or {}
        self.causes = causes or {}
        self.unsolved = unsolved or {}
        self.messages = messages or {}

    def brief(self) -> str:
        """The same facts without tracebacks, paths or timings: stable, for notebooks."""
        return "\n".join(f"rank {r}: {short_locations(self.causes.get(r, ''))}" for r in self.ranks)


class HangError(_Readable, TimeoutError):
    """The workers stopped making progress. `.statuses`: rank -> RankStatus (what it was
    blocked in); `.outputs` and `.trace` as for WorkerError (the calls that never ended)."""

    def __init__(self, message, statuses=None, stuck_for=0.0, reason=""):
        super().__init__(message)
        self.statuses = statuses or {}
        self.stuck_for = stuck_for      # > 0: every rank sat waiting this long (stuck_after)
        self.reason = reason            # which deadline passed, in a phrase

    def brief(self) -> str:
        """Per rank, the call it was blocked in, without timings: stable, for notebooks."""
        return "\n".join("  " + line for line in describe_statuses(self.statuses, timings=False))


class Interrupted(_Readable, KeyboardInterrupt):
    """You interrupted a launch. `.statuses`: what each rank was doing when stopped."""

    def __init__(self, statuses):
        workers = f"{len(statuses)} worker{'s' if len(statuses) != 1 else ''}"
        lines = [f"you stopped the launch, and its {workers} with it. Where each was:",
                 *("  " + line for line in describe_statuses(statuses))]
        super().__init__("\n".join(lines))
        self.statuses = statuses


def signal_name(code) -> str:
    if code is None:
        return "was killed"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code} without returning"


# The last line of a WorkerError: where the rest is. An uncaught exception has no `err`
# variable: IPython keeps it as sys.last_value (Python 3.12+: also sys.last_exc).
DETAILS = ("Details: catch it (`except WorkerError as err:`), or after this cell "
           "`import sys; err = sys.last_value`; then err.tracebacks[rank] (full tracebacks), "
           "err.outputs[rank] (what each rank printed), err.trace (its torch.distributed calls).")


def raise_if_failed(outcome, timeout, pg_timeout) -> None:
    """Turn a failed or hung Attempt into HangError or WorkerError; do nothing if it ran."""
    failures, deaths = outcome.failures, outcome.deaths
    gloo_timeouts = {r for r, f in failures.items() if _GLOO_TIMEOUT.search(f.summary)}
    collateral = {r for r, f in failures.items() if _COLLATERAL.search(f.summary)}
    if outcome.hang or (gloo_timeouts and not deaths
                        and set(failures) <= gloo_timeouts | collateral):
        raise _hang_error(outcome, timeout, pg_timeout, gloo_timeouts)
    if failures or deaths:
        raise _worker_error(outcome, collateral)


def _hang_error(outcome, timeout, pg_timeout, gloo_timeouts) -> HangError:
    why = (f"not every rank joined the process group within {JOIN_TIMEOUT:g} s"
           if outcome.hang == Hang.JOIN else
           f"every rank still running sat waiting in a torch.distributed call and nothing "
           f"was posted or completed for {outcome.stuck_for:.1f} s" if outcome.hang == Hang.STUCK else
           f"nothing moved for {outcome.waited:.0f} s: no rank posted, completed or finished "
           f"an operation, moved data or computed (a rank blocked outside torch.distributed, "
           f"sleeping or waiting for input, while the others wait for it?)"
           if outcome.hang == Hang.QUIET else
           outcome.no_peer if outcome.hang == Hang.NO_PEER else
           _idle(outcome) if outcome.hang == Hang.IDLE else
           f"no result after the launch timeout ({outcome.waited or timeout:g} s)"
           # only the cap is past the timeout; (a + t) - a may exceed t by a rounding error
           + (", though the ranks kept computing or moving data (a loop that never ends?)"
              if outcome.waited > 1.5 * timeout else "") if outcome.hang else
           f"gloo's timeout ({pg_timeout:g} s) fired in rank(s) "
           f"{', '.join(map(str, sorted(gloo_timeouts)))}")
    lines = [f"the workers stopped making progress: {why}.",
             *("  " + line for line in describe_statuses(outcome.statuses)),
             "All workers were stopped. A gloo pair that timed out cannot be reused, so the "
             "next launch starts fresh workers."]
    return HangError("\n".join(lines), outcome.statuses, outcome.stuck_for, reason=why)


def _idle(outcome) -> str:
    """One clause per idle rank, asleep ('rank 0 has been asleep outside torch.distributed
    for 7 s at labs/deadlocks.py:203 ...') or computing ('rank 0 has computed for 4.0
    CPU-seconds outside torch.distributed at ...')."""
    clauses = []
    for r, idle in sorted(outcome.idle_for.items()):
        status = outcome.statuses.get(r)
        at = f" at {status.where}" if status is not None and status.where else ""
        if idle.spinning:
            clauses.append(f"rank {r} has computed for {idle.cpu:.1f} CPU-seconds outside "
                           f"torch.distributed{at}, with nothing posted or completed (a loop "
                           f"that never ends? a right body needs well under a second here, "
                           f"unless it loops over every element in Python)")
        elif idle.cpu is None:      # no CPU reading here (not Linux): asleep or a loop
            clauses.append(f"rank {r} has made no progress outside torch.distributed for "
                           f"{idle.seconds:.0f} s{at} (a loop, a sleep or a wait of its own "
                           f"that never ends?)")
        else:
            clauses.append(f"rank {r} has been asleep outside torch.distributed for "
                           f"{idle.seconds:.0f} s{at} (a sleep or a wait of its own that "
                           f"never ends?)")
    return "; ".join(clauses)


def _worker_error(outcome, collateral) -> WorkerError:
    failures, deaths, outputs = outcome.failures, outcome.deaths, outcome.outputs
    # A rank that fails takes its connections down with it; its peers then fail with
    # "Connection closed by peer". Name the cause first; peers' tracebacks are noise.
    if collateral == set(failures) and not deaths:
        collateral = set()
    ranks = sorted((set(failures) | set(deaths)) - collateral)
    causes = {r: failures[r].summary if r in failures else signal_name(deaths[r]) for r in ranks}
    lines = []
    for group in _same_cause(ranks, failures, causes):
        lines += _describe_cause(group, failures, deaths, causes, outputs)
    if collateral:
        lines.append(f"Then {_ranks(sorted(collateral))} failed because a peer's connection "
                     f"closed: {failures[min(collateral)].summary[:160]}")
    others = {r: s for r, s in outcome.statuses.items() if r not in ranks and r not in collateral}
    if others:
        lines.append("The other ranks were stopped while:")
        lines.extend("  " + line for line in describe_statuses(others))
    lines.append(DETAILS)
    unsolved = {r: failures[r].unsolved for r in ranks
                if r in failures and failures[r].unsolved is not None}
    return WorkerError("\n".join(lines), ranks,
                       {r: f.traceback for r, f in failures.items()}, outcome.statuses, causes,
                       unsolved, {r: f.message for r, f in failures.items()})


def _ranks(ranks) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _same_cause(ranks, failures, causes) -> list:
    """Ranks grouped by cause (same message, same place), in order of their first rank."""
    groups = {}
    for r in ranks:
        where = tuple((f.file, f.line) for f in failures[r].frames) if r in failures else ()
        groups.setdefault((causes[r], where), []).append(r)
    return list(groups.values())


def _describe_cause(group, failures, deaths, causes, outputs) -> list:
    r = group[0]
    if r in deaths:
        line = f"{_ranks(group)} {causes[r]}"
        if r not in outputs:
            line += (" before it could run your function (a script that calls launch() must "
                     "do so under `if __name__ == \"__main__\":`)")
        lines = [line]
        aborted = abort_lines(outputs.get(r, ""))
        if aborted:                 # gloo's reason, said here once (the replay omits it)
            lines += ["  " + text for text in aborted]
        elif outputs.get(r, "").strip():
            lines.append("  its last output:")
            lines += ["    " + text for text in outputs[r].rstrip().splitlines()[-5:]]
        return lines
    return [f"{_ranks(group)} raised {causes[r]}", *_where(failures[r].frames)]


def _is_library(file: str) -> bool:
    return file.startswith(("labs/harness/", "<")) or "site-packages" in file or \
        file.startswith((sys.prefix, sys.base_prefix))


def _where(frames, shown=4) -> list:
    """Your frames first (innermost first), then where inside a library it was raised."""
    own = [f for f in reversed(frames) if not _is_library(f.file)]
    lines = []
    for f in own[:shown]:
        lines.append(f"  {f.file}:{f.line} in {f.function}")
        if f.code:
            lines.append(f"      {f.code}")
    if frames and _is_library(frames[-1].file) and own:
        inner = frames[-1]
        lines.append(f"  (raised inside {inner.function}, {_short_path(inner.file)}:{inner.line})")
    return lines


def _short_path(file: str) -> str:
    """'/.../site-packages/torch/distributed/distributed_c10d.py' -> 'torch/distributed/...'."""
    return file.split("site-packages/", 1)[-1]
