"""Calls that raised and ranks that died: send/recv to self, a communication call that
failed, a rank killed without an exception, a group that destroy_process_group() did not
free; and the script's own errors (not a finding: the doctor's exit status 2 when nothing
else explains them)."""
from __future__ import annotations

from labs.doctor.findings import Finding, short_error
from labs.doctor.holders import Holder, decode

NCCL_SELF = ("NCCL allows send/recv to self only as a matched pair inside one batch (one "
             "group); a lone one is ncclInvalidUsage and the call raises")
NCCL_SELF_SOURCE = ("NVIDIA/nccl src/enqueue.cc, scheduleP2pTasksToPlan ('Trying to recv to "
                    "self without a matching send'); torch checks ncclGroupEnd's result")
SELF_TEXT = "should not be the same as the rank"


PYTHON_NCCL = ("the same on NCCL: torch raises it in its own Python ({where}), before any "
               "backend is involved")
PYTHON_SOURCE = "torch 2.13 torch/distributed/distributed_c10d.py, {where}"
POLL_GLOO = ("rank {r} polled is_completed() on {op} and never called wait(): on gloo a "
             "point-to-point Work says False until wait() is called, so the loop never "
             "ends; the doctor stopped it after {s:g} s")
POLL_NCCL = ("on CUDA is_completed() turns True once the operation is enqueued and its output "
             "can be used on the default stream without further synchronization, so the loop "
             "ends there. wait() is right on both")
POLL_SOURCE = ("torch.distributed docs, 'Synchronous and asynchronous collective operations': "
               "is_completed(), 'In the case of CUDA operations, returns True if the operation "
               "has been successfully enqueued onto a CUDA stream and the output can be "
               "utilized on the default stream without further synchronization'")
# What a rank sees when a peer is gone (raised, died) or never comes: a consequence.
PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "pair closure",
             "Timed out waiting", "Socket closed")


def _python_raised(exit_event) -> bool:
    """Raised by a `raise` in torch.distributed's Python (agent.py: kind "python")."""
    return exit_event is not None and exit_event.kind == "python"


def _python_nccl(exit_event) -> tuple:
    where = exit_event.name or exit_event.api
    return PYTHON_NCCL.format(where=where), PYTHON_SOURCE.format(where=where)


def self_findings(runs) -> list:
    out = []
    for run in runs.values():
        for c in run.calls:
            if c.p2p and c.peer == c.rank:
                seen = f"the call raised {short_error(c.raised)}" if c.raised else \
                    "gloo has no connection to the rank's own process"
                out.append(Finding("self", "a send or receive with the rank itself",
                                   (c.rank,), [(c.rank, c.where)],
                                   f"rank {c.rank}'s {c.describe()}: {seen}", NCCL_SELF,
                                   NCCL_SELF_SOURCE))
        if run.exit is not None and SELF_TEXT in run.exit.text:
            nccl, source = _python_nccl(run.exit) if _python_raised(run.exit) else \
                (NCCL_SELF, NCCL_SELF_SOURCE)
            out.append(Finding("self", "a send or receive with the rank itself",
                               (run.rank,), [(run.rank, run.exit.where)],
                               f"the call raised {short_error(run.exit.text)}", nccl, source))
    return out


def failure_findings(runs, explained_ranks: set) -> list:
    """A communication call that raised (other than to self), or a rank that died, when no
    other finding names that rank."""
    out = []
    for run in runs.values():
        if run.rank in explained_ranks:
            continue
        e = run.exit
        if e is not None and e.text and e.api and SELF_TEXT not in e.text \
                and e.kind != "polled":
            nccl, source = _python_nccl(e) if _python_raised(e) else \
                ("not modelled for this error", "")
            api = (e.name or e.api).split(",")[0].split(".")[0]
            out.append(Finding("call_failed", f"{api} raised on rank {run.rank}", (run.rank,),
                               [(run.rank, e.where)], f"it raised {short_error(e.text)}",
                               nccl, source))
    return out


def polling_findings(runs) -> list:
    """A loop polling is_completed() that the record stopped (agent.py: exit kind
    "polled"): on gloo it never ends; on NCCL it does."""
    from labs.harness.grading.run import HANG_SECONDS
    out = []
    for run in runs.values():
        e = run.exit
        if e is None or e.kind != "polled":
            continue
        polled = run.by_seq.get(e.seq)
        op = polled.describe() if polled is not None else "a request"
        where = [(run.rank, e.where)] + ([(run.rank, polled.where)] if polled else [])
        out.append(Finding("polled_not_waited", "a loop polls is_completed() instead of "
                           "calling wait()", (run.rank,), where,
                           POLL_GLOO.format(r=run.rank, op=op, s=HANG_SECONDS),
                           POLL_NCCL, POLL_SOURCE))
    return out


def _roots(runs) -> set:
    """Ranks whose own bug ended them: an error that is not a peer gone (raised, polled)."""
    return {r for r, run in runs.items() if run.exit is not None and run.exit.text
            and not any(g in run.exit.text for g in PEER_GONE)}


AFTER_EFFECTS = {"unmatched_send", "unmatched_recv", "partly_waited", "unwaited",
                 "call_failed", "nccl_first_batch"}


def _follows(f, runs, roots) -> bool:
    """Is this finding what another rank's failure left behind? Its calls are all with a
    rank that failed first (or it is a peer-gone error); a polled rank's own requests."""
    if f.kind not in AFTER_EFFECTS:
        return False
    if set(f.ranks) <= {r for r in roots if runs[r].exit.kind == "polled"}:
        return f.kind in ("unwaited", "partly_waited")
    if not set(f.ranks).isdisjoint(roots):
        return False
    if f.kind == "call_failed":
        return any(g in f.gloo for g in PEER_GONE)
    calls = [c for r, w in f.where for c in runs[r].calls if c.where == w]
    return bool(calls) and all(c.peer in roots for c in calls)


def one_bug_one_problem(found: list, runs) -> list:
    """A rank's failure and what it left behind on its peers (their receives that matched
    nothing, their "Connection closed by peer") are one problem: the after-effects become
    lines of the failure's entry, not entries of their own."""
    roots = _roots(runs)
    heads = [f for f in found if not set(f.ranks).isdisjoint(roots)
             and f.kind not in AFTER_EFFECTS - {"call_failed"}]
    if not heads:
        return found
    after = [f for f in found if f not in heads and _follows(f, runs, roots)]
    for f in after:
        line = (f"then, as a consequence: {f.title} (rank{'s' if len(f.ranks) > 1 else ''} "
                f"{', '.join(map(str, f.ranks))} at {f.first_where})")
        if set(f.ranks).isdisjoint(roots) and line not in heads[0].extra:
            heads[0].extra.append(line)      # a polled rank's own requests: the same bug
    return [f for f in found if f not in after]


PINNED = ("destroy_process_group() returned, but the group's {n} gloo worker threads still run: "
          "it is still held by {held}. They end at interpreter shutdown, where a gloo thread can "
          "abort the process after its work ('terminate called without an active exception'). "
          "To free the group: {todo}")
UNNAMED = Holder("something the doctor could not name (not a variable of the script, an "
                 "attribute or a default argument)",
                 "find what still refers to the group or to its P2POps")
PINNED_NCCL = ("not modelled: destroy_process_group() calls shutdown() on every group, held or "
               "not (torch/distributed/distributed_c10d.py); what that ends on NCCL is not "
               "checked here")
ABORT_TEXT = "terminate called without an active exception"


def _aborted(run) -> bool:
    """The rank finished its script, then its process aborted at shutdown."""
    return run.exit is not None and not run.exit.text and ABORT_TEXT in run.stderr


def pinned_findings(runs) -> list:
    """destroy_process_group() that freed nothing: the group's threads outlive it, and what
    holds it, with the fix that frees it (holders.py). A note (exit status unchanged) unless
    a rank did abort at shutdown in this run; no note when the holder cannot be named."""
    out = []
    for run in runs.values():
        d = run.destroyed
        if d is None or not d.numel:
            continue
        held, aborted = decode(d.text), _aborted(run)
        if not held and not aborted:
            continue                    # nothing to act on, and nothing happened
        held = held or [UNNAMED]
        text = PINNED.format(n=d.numel, held="; ".join(h.what for h in held),
                             todo="; ".join(dict.fromkeys(h.fix for h in held)))
        text += (f". Rank {run.rank} did abort at shutdown in this run" if aborted else
                 ". No rank aborted in this run (the abort is a race at shutdown)")
        out.append(Finding("group_outlives_destroy", "the process group outlived "
                           "destroy_process_group()", (run.rank,), [(run.rank, d.where)],
                           text, PINNED_NCCL, warning=True, note=not aborted))
    return out


def script_errors(runs) -> list[str]:
    """The script's own failures, not in a torch.distributed call: 'rank 0: x.py:3: ...'."""
    roots = _roots(runs)
    return [f"rank {r}: {run.exit.where}: {run.exit.text}" for r, run in runs.items()
            if run.exit is not None and run.exit.text and not run.exit.api
            and SELF_TEXT not in run.exit.text and (r in roots or not roots)]


def died(runs, outcome) -> list[int]:
    """Ranks whose Python never finished and that the doctor did not stop."""
    return [] if outcome.stopped else [r for r, run in runs.items() if run.exit is None]
