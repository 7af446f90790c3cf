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
            out.append(Finding("self", "a send or receive with the rank itself",
                               (run.rank,), [(run.rank, run.exit.where)],
                               f"the call raised {short_error(run.exit.text)}", NCCL_SELF,
                               NCCL_SELF_SOURCE))
    return out


def failure_findings(runs, explained_ranks: set) -> list:
    """A communication call that raised (other than to self), or a rank that died, when no
    other finding names that rank."""
    out = []
    for run in runs.values():
        if run.rank in explained_ranks:
            continue
        e = run.exit
        if e is not None and e.text and e.api and SELF_TEXT not in e.text:
            out.append(Finding("call_failed", f"{e.api} raised on rank {run.rank}", (run.rank,),
                               [(run.rank, e.where)], f"it raised {short_error(e.text)}",
                               "not modelled for this error"))
    return out


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
    return [f"rank {r}: {run.exit.where}: {run.exit.text}" for r, run in runs.items()
            if run.exit is not None and run.exit.text and not run.exit.api
            and SELF_TEXT not in run.exit.text]


def died(runs, outcome) -> list[int]:
    """Ranks whose Python never finished and that the doctor did not stop."""
    return [] if outcome.stopped else [r for r, run in runs.items() if run.exit is None]
