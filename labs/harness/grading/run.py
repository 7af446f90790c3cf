"""Run an exercise on real workers for a grader, and turn what went wrong into advice."""
from __future__ import annotations

import re

from labs import HangError, WorkerError, launch
from labs.harness.exercises import SOLUTIONS_ENV

# gloo's own timeout for every send, receive and wait in a grader's workers: a deadlock is
# reported this many seconds after it happens, not when the launch deadline passes.
HANG_SECONDS = 4.0
# The stub's NotImplementedError (labs.harness.exercises.todo): which exercise, where.
_UNSOLVED = re.compile(r"NotImplementedError: exercise (\w+) in (\S+) is not solved yet: "
                       r"write its body \(see ([^)]*)\)")


class GradeFailure(AssertionError):
    """An exercise produced a wrong result or failed; the message says what and where."""


GradeFailure.__module__ = "labs.harness.grading"   # where graders import it from


def grade(worker, world_size, args=(), timeout=30.0, what="the exercise",
          pg_timeout=HANG_SECONDS, **kwargs):
    """launch() for graders: quiet, stubs never replaced, failures turned into advice.

    `what` names the exercise(s) under test: an unsolved exercise named in it is "not
    implemented yet"; any other unsolved exercise it calls is a dependency to solve first.
    """
    try:
        return launch(worker, world_size, args=args, timeout=timeout, quiet=True,
                      pg_timeout=pg_timeout, env={SOLUTIONS_ENV: "0"}, **kwargs)
    except WorkerError as exc:
        unsolved = {m[1]: m for m in map(_UNSOLVED.match, exc.causes.values()) if m}
        if unsolved:
            raise GradeFailure(" ".join(_unsolved_message(m, what)
                                        for m in unsolved.values())) from None
        checked = {r: c for r, c in exc.causes.items() if c.startswith("GradeFailure: ")}
        if checked:     # a check inside the worker failed: its message says it all
            rank, cause = min(checked.items())
            cause = cause.removeprefix("GradeFailure: ")
            who = "" if cause.startswith(f"rank {rank} ") else f"rank {rank}: "
            raise GradeFailure(f"{what} (world_size={world_size}{_case(exc, rank)}): {who}"
                               f"{cause}") from None
        rank = min(exc.ranks) if exc.ranks else 0
        raise GradeFailure(f"{what} (world_size={world_size}{_case(exc, rank)}): rank {rank} "
                           f"{_cause(exc.causes.get(rank, 'failed'))}\n{exc}") from None
    except HangError as exc:
        blocked = "; ".join(s.describe(timings=False) for _, s in sorted(exc.statuses.items()))
        case = next((_case(exc, r) for r in sorted(exc.statuses) if _case(exc, r)), "")
        raise GradeFailure(
            f"{what} hung (world_size={world_size}{case}): {blocked}\n"
            f"Nothing moved for {pg_timeout:g} s: a deadlock (two ranks each waiting for the "
            f"other) or a send/recv with no partner. Notebook 04 shows how to read this.") \
            from None


def _unsolved_message(match, what) -> str:
    name, file, where = match.groups()
    if name in what:
        return f"{name} is not implemented yet: write its body in {file} (see {where})."
    lesson = file.rsplit("/", 1)[-1].removesuffix(".py")
    return (f"{what} calls {name} ({file}), which is not solved yet: solve it first (see "
            f"{where}) and grade it with .venv/bin/python -m pytest --impl=labs "
            f"tests/graders/test_{lesson}.py")


def _case(exc, rank) -> str:
    """', case <label>' if rank `rank` was inside a grader case (grading.call's note)."""
    status = exc.statuses.get(rank)
    note = status.note if status is not None else ""
    return f", {note}" if note.startswith("case ") else ""


def _cause(cause: str) -> str:
    return cause if cause.startswith(("was killed", "exited")) else f"raised {cause}"


def fail_if_any(failures, what, shown=6):
    """Raise one GradeFailure listing every wrong case (`failures`: messages, per rank or flat)."""
    flat = [f for item in failures for f in ([item] if isinstance(item, str) else item)]
    if flat:
        more = f"\n... and {len(flat) - shown} more" if len(flat) > shown else ""
        first, *rest = flat[:shown]
        raise GradeFailure(f"{what}: {first}" + "".join(f"\n{f}" for f in rest) + more
                           + (f"\n({len(flat)} wrong cases in all)" if len(flat) > 1 else ""))
