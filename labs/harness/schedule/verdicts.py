"""Verdicts: the problems `check` names, each with the ranks and ops involved.

Every function here reads a compiled schedule and its simulation and returns a list of
`Verdict`s of one family: calls that raise, buffers that disagree, ops that match
nothing, fragile spots. Deadlocks have their own module (`deadlock`).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from labs.harness.ranks.calls import fifo_pairs
from labs.harness.schedule.language import Batch, itemsize
from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.program import Schedule, unpaired_self_ops
from labs.harness.schedule.simulation import Simulation


@dataclass
class Verdict:
    """One problem found. `outcome`: what it does on gloo (hang, error, abort, silent, or
    warning = fine here but fragile). `reached`: False if the run stops before it."""

    kind: str
    ranks: tuple
    message: str
    outcome: Outcome
    reached: bool = True
    nccl: str = ""
    ops: tuple = ()

    def __str__(self):
        head = f"[{self.kind}] " + ("" if self.reached else "(not reached: the run stops "
                                                          "before it) ")
        text = textwrap.fill(head + self.message, 92, initial_indent="  - ",
                             subsequent_indent="    ", break_long_words=False)
        if self.nccl:
            text += "\n" + textwrap.fill("NCCL: " + self.nccl, 92, initial_indent="    ",
                                         subsequent_indent="      ", break_long_words=False)
        return text



def final_matching(sched: Schedule, sim: Simulation) -> dict:
    """The simulation's pairs, extended FIFO per channel to the ops it never reached.
    For specific-source ops this is exactly gloo's matching: the k-th send from s to d
    with tag t meets the k-th receive on d from s with tag t, in program order."""
    ops, nccl = sched.ops, sim.backend == "nccl"
    matching = dict(sim.partner)
    unpaired = unpaired_self_ops(sched) if nccl else set()

    def valid(p):
        if p.id in matching or p.id in unpaired:
            return False
        if p.peer is not None and not 0 <= p.peer < sched.world_size:
            return False
        return not (p.peer == p.rank and not nccl) and not (p.peer is None and nccl)

    def chan(src, dst, tag):
        return (src, dst) if nccl else (src, dst, tag)

    sends, recvs, anys = [], [], []
    for p in filter(valid, ops):       # ops are numbered rank by rank, in program order
        if p.send:
            sends.append((chan(p.rank, p.peer, p.tag), p.id))
        elif p.peer is None:
            anys.append(p.id)
        else:
            recvs.append((chan(p.peer, p.rank, p.tag), p.id))
    pairs, left = fifo_pairs(sends, recvs)
    for s, q in pairs:
        matching[s], matching[q] = q, s
    for q in anys:
        p = ops[q]
        key = next((k for k in sorted(left) if k[1] == p.rank and left[k]
                    and (nccl or k[2] == p.tag)), None)
        if key is not None:
            s = left[key].popleft()
            matching[s], matching[q] = q, s
    return matching


def call_verdicts(sched, sim, backend):
    """Calls that raise at once: a peer that does not exist, self send/recv on gloo (on
    NCCL: one without its partner in the same call), any-source receive on NCCL."""
    out, ws = [], sched.world_size
    unpaired = unpaired_self_ops(sched) if backend == "nccl" else set()
    for p in sched.ops:
        reached = p.id in sim.posted
        if p.peer is not None and not 0 <= p.peer < ws:
            out.append(Verdict("bad_peer", (p.rank,), f"{p.where()}: rank {p.peer} does not "
                               f"exist (world size {ws}); the call raises.", Outcome.ERROR, reached,
                               "an error there too.", (p.id,)))
        elif p.peer == p.rank and backend == "gloo":
            what = "sends to itself" if p.send else "receives from itself"
            err = ("ValueError (a blocking send to self)" if p.op.kind == "send" else
                   "RuntimeError 'Pair is not connected'")
            out.append(Verdict("self", (p.rank,), f"{p.where()} {what}: gloo has no pair to "
                               f"the rank's own process, so the call raises {err}.", Outcome.ERROR,
                               reached, NCCL_SELF, (p.id,)))
        elif p.id in unpaired:
            what = "sends to itself" if p.send else "receives from itself"
            other = "receive from" if p.send else "send to"
            out.append(Verdict("self", (p.rank,), f"{p.where()} {what} with no matching "
                               f"{other} itself in the same call: NCCL rejects the group "
                               f"(ncclInvalidUsage) and the call raises.", Outcome.ERROR, reached,
                               "", (p.id,)))
        elif p.peer is None and backend == "nccl":
            out.append(Verdict("any_source", (p.rank,), f"{p.where()}: NCCL has no "
                               f"any-source receive; the call raises.", Outcome.ERROR, reached,
                               "", (p.id,)))
    return out


NCCL_SELF = ("NCCL allows send/recv to self only as a matched pair in one batch (one "
             "group); a self send or receive without its partner in the same group is "
             "ncclInvalidUsage, and the call raises.")


def buffer_verdicts(sched, sim, matching):
    """Matched pairs whose buffers disagree: gloo compares byte counts, nothing else."""
    out, ops = [], sched.ops
    for s_id, q_id in sorted(matching.items()):
        s, q = ops[s_id], ops[q_id]
        if not s.send or (s.nbytes == q.nbytes and s.op.dtype == q.op.dtype):
            continue
        kind, what, outcome, nccl = _buffer_mismatch(s, q, sim.backend)
        out.append(Verdict(kind, (s.rank, q.rank), f"{s.where()} -> {q.where()}: {what}",
                           outcome, s_id in sim.completed, nccl, (s_id, q_id)))
    return out


def _buffer_mismatch(s, q, backend) -> tuple:
    """(kind, what happens, outcome on `backend`, what NCCL does) for send `s` matched to
    receive `q` when their buffers disagree."""
    gloo = backend == "gloo"
    if q.nbytes < s.nbytes:
        return ("size_mismatch",
                f"the receive buffer ({q.nbytes} bytes) is smaller than the message "
                f"({s.nbytes} bytes). gloo aborts the receiving process (SIGABRT: 'Received "
                f"data size doesn't match expected size'); nothing can catch it.",
                Outcome.ABORT if gloo else Outcome.UNDEFINED,
                "NCCL does not check sizes: undefined (corrupt data or a hang).")
    if q.nbytes > s.nbytes:
        retyped = (f", and those bytes are read as {q.op.dtype} although they were "
                   f"{s.op.dtype}" if q.op.dtype != s.op.dtype else "")
        count = "" if retyped else f" = {s.nbytes // itemsize(q.op.dtype)} elements"
        return ("size_mismatch",
                f"the receive buffer ({q.nbytes} bytes) is larger than the message "
                f"({s.nbytes} bytes). gloo fills a prefix (the first {s.nbytes} bytes{count}) "
                f"and leaves the rest untouched{retyped}: silently wrong, no error.",
                Outcome.SILENT if gloo else Outcome.UNDEFINED,
                "NCCL does not check sizes either: undefined.")
    return ("dtype_mismatch",
            f"the same byte count ({s.nbytes}), different dtypes: the {s.op.dtype} bytes are "
            f"silently reinterpreted as {q.op.dtype} (gloo matches bytes, not types).",
            Outcome.SILENT, "torch does not compare dtypes on NCCL either.")


def lonely_verdicts(sched, sim, matching, backend, excluded):
    """Ops that match nothing. A send and a receive between the same two ranks that differ
    only in tag are one verdict: a tag mismatch."""
    lone = [p for p in sched.ops if p.id not in matching and p.id not in excluded]
    out = _tag_mismatches(lone, sim) if backend == "gloo" else []
    return out + [_unmatched(p, sim, backend) for p in lone]


def _tag_mismatches(lone, sim) -> list:
    """On gloo: a lone receive and a lone send between the same ranks with another tag, as
    one verdict each pair (the pair is taken out of `lone`)."""
    out = []
    for q in [p for p in lone if not p.send and p.peer is not None]:
        s = next((p for p in lone if p.send and p.rank == q.peer and p.peer == q.rank
                  and p.tag != q.tag), None)
        if s is None:
            continue
        lone.remove(s)
        lone.remove(q)
        waited = s.waited or q.waited
        out.append(Verdict(
            "tag_mismatch", (s.rank, q.rank),
            f"{s.where()} has tag {s.tag} but {q.where()} expects tag {q.tag}: gloo honours "
            f"tags, so they never match" + (", and the call that waits for them waits until "
                                            "the timeout." if waited else "; nothing waits "
                                            "for them, so the message is silently lost."),
            Outcome.HANG if waited else Outcome.SILENT, s.id in sim.posted or q.id in sim.posted,
            "NCCL ignores tags: these two match there.", (s.id, q.id)))
    return out


def _unmatched(p, sim, backend) -> Verdict:
    """One op no partner is left for: it hangs if waited for, else it is silently lost."""
    tag = f" with tag {p.tag}" if backend == "gloo" else ""
    if p.send:
        why = f"no receive on rank {p.peer} from rank {p.rank}{tag} is left to match it"
    else:
        src = "any rank" if p.peer is None else f"rank {p.peer}"
        why = f"no send from {src} to rank {p.rank}{tag} is left to match it"
    if p.waited:
        rule = " (a send completes only once its receive is posted)" if p.send else ""
        tail, outcome = f": it waits forever{rule}.", Outcome.HANG
    else:
        tail = (": nothing waits for it, so the program goes on and the message is lost."
                if p.send else ": nothing waits for it, so the program goes on with a "
                "buffer that was never written.")
        outcome = Outcome.SILENT
    return Verdict(
        "unmatched_send" if p.send else "unmatched_recv", (p.rank,),
        f"{p.where()}: {why}{tail}", outcome, p.id in sim.posted,
        "the same on NCCL, where the first call between two ranks also sets up their "
        "communicator, which needs both: even an op nobody waits for can hang there "
        "(pytorch#108378).", (p.id,))



def warning_verdicts(sched, sim, matching, backend):
    """Fine in this schedule, fragile anyway."""
    out, ops = [], sched.ops
    for r in range(sched.world_size):
        for pid in sched.unwaited[r]:
            if pid in matching:
                p = ops[pid]
                out.append(Verdict(
                    "unwaited", (r,), f"{p.where()} is never waited for: the program may read "
                    f"or reuse its buffer before the transfer is done (a barrier does not "
                    f"complete it; only wait() does).", Outcome.WARNING, pid in sim.posted,
                    "the same on NCCL, where wait() only orders the CUDA stream.", (pid,)))
    seen = set()
    for q in ops:
        if q.send or q.peer is not None or (q.rank, q.tag) in seen:
            continue
        senders = sorted({p.rank for p in ops if p.send and p.peer == q.rank and
                          (p.tag == q.tag or backend == "nccl")})
        if len(senders) > 1:
            seen.add((q.rank, q.tag))
            out.append(Verdict(
                "any_source_race", (q.rank, *senders),
                f"rank {q.rank} receives from any source (tag {q.tag}) and ranks "
                f"{', '.join(map(str, senders))} all send to it: which message lands in which "
                f"buffer depends on timing.", Outcome.WARNING, q.id in sim.posted,
                "NCCL has no any-source receive: src=None raises there.", (q.id,)))
    return out



def nccl_first_batch_verdicts(sched):
    """NCCL only: a batch as the first call on the group needs every rank in it."""
    firsts = [type(sched.instrs[r][0].item) if sched.instrs[r] else None
              for r in range(sched.world_size)]
    if Batch not in firsts or all(f is Batch for f in firsts):
        return []
    return [Verdict(
        "nccl_first_batch", tuple(r for r, f in enumerate(firsts) if f is Batch),
        "a batch is the first call on the group, but not every rank takes part in "
        "it: undefined on NCCL (torch's batch_isend_irecv docstring).", Outcome.UNDEFINED)]
