"""The test side of a grader, part 2: checks on the method, from the trace.

Each takes a list of `labs.harness.ranks.tracing.Event`: the calls one `Call` made
(`call.events`) or a whole launch's trace (`results.trace`), and raises GradeFailure
saying what the lesson expected and what the trace shows.
"""
from __future__ import annotations


from labs.harness.grading.run import GradeFailure
from labs.harness.ranks.calls import P2P_CALLS, SENDS

# What a rank may do besides point-to-point ops while it runs a point-to-point exercise:
# waits, computation, and synchronisation that moves no data.
NOT_COLLECTIVES = (*P2P_CALLS, "wait", "compute", "barrier", "monitored_barrier")


def p2p_ops(events, rank=None, ops=P2P_CALLS) -> list:
    """The point-to-point ops among `events` (of one rank, if given), in the order posted."""
    return [e for e in events if e.op in ops and (rank is None or e.rank == rank)]


def check_p2p_only(events, what, builds="it"):
    """No collective (all_reduce, broadcast, barrier, ...): point-to-point ops only."""
    found = sorted({e.op for e in events if e.op not in NOT_COLLECTIVES})
    if found:
        raise GradeFailure(f"{what}: the lesson builds {builds} from point-to-point sends and "
                           f"receives only; the trace shows {', '.join(found)}")


def check_batched(events, what, hint="post the operations with one batch_isend_irecv"):
    """Every point-to-point op went through dist.batch_isend_irecv."""
    loose = [e for e in p2p_ops(events) if e.batch is None]
    if loose:
        raise GradeFailure(f"{what}: rank {loose[0].rank} called {loose[0].describe()} "
                           f"outside batch_isend_irecv; {hint}")


def check_one_batch(events, what, *, rank, expected, n_ops=None):
    """All the point-to-point ops of one call (`n_ops` of them, if given) were posted in
    one batch_isend_irecv call. `expected` says what that batch holds, for the message."""
    ops = p2p_ops(events)
    batches = {e.batch for e in ops}
    if len(batches) != 1 or None in batches or n_ops not in (None, len(ops)):
        loose = " and point-to-point ops outside a batch" if None in batches else ""
        raise GradeFailure(f"{what}: rank {rank} posted {len(ops)} point-to-point op(s) in "
                           f"{len(batches - {None})} batch_isend_irecv call(s){loose}; "
                           f"expected {expected} in ONE batch_isend_irecv call")


def check_messages(events, what, *, rank, dtype, largest, total, why):
    """Every message this rank sent is in `dtype` and holds at most `largest` elements, and
    they add up to at most `total` elements. `why`: the method those limits come from."""
    sent = p2p_ops(events, rank, SENDS)
    other = [e for e in sent if e.dtype != dtype]
    if other:
        raise GradeFailure(f"{what}: rank {rank} sent {other[0].describe()}; every message "
                           f"must be in the tensor's own dtype ({dtype}): {why}")
    big = max((e.numel for e in sent), default=0)
    count = sum(e.numel for e in sent)
    if big > largest or count > total:
        raise GradeFailure(f"{what}: rank {rank} sent {len(sent)} message(s), the largest "
                           f"{big} elements, {count} in all; expected messages of at most "
                           f"{largest} elements, at most {total} in all: {why}")


def check_peers(events, what, *, rank, to, frm, why):
    """This rank sent only to rank `to` and received only from rank `frm`."""
    for e in p2p_ops(events, rank):
        expected = to if e.op in SENDS else frm
        if e.peer != expected:
            raise GradeFailure(f"{what}: rank {rank} called {e.describe()}; expected it to "
                               f"{'send only to' if e.op in SENDS else 'receive only from'} "
                               f"rank {expected}: {why}")


def check_overlap(events, what, *, rank, label, task):
    """Overlap: every transfer was posted (non-blocking) before the compute span(s) named
    `label` began, and waited for only after they ended. `task` names the computation."""
    ops = p2p_ops(events, rank)
    blocking = [e for e in ops if e.blocking]
    if blocking or not ops:
        raise GradeFailure(f"{what}: rank {rank} used "
                           f"{blocking[0].describe() if blocking else 'no point-to-point op'}; "
                           f"post non-blocking transfers (batch_isend_irecv or isend/irecv), "
                           f"compute {task} while they fly, then wait")
    computes = [e for e in events if e.rank == rank and e.op == "compute" and e.label == label]
    if not computes:
        raise GradeFailure(f"{what}: rank {rank} never computed {task}")
    waits = [e for e in events if e.rank == rank and e.op == "wait"
             and e.waits_for in {o.seq for o in ops}]
    if max(o.seq for o in ops) > min(c.seq for c in computes):
        raise GradeFailure(f"{what}: rank {rank} computed {task} before posting "
                           f"{ops[-1].describe()}: nothing was in flight to overlap with. "
                           f"Post every transfer first, then compute, then wait")
    if waits and min(w.seq for w in waits) < max(c.seq for c in computes):
        raise GradeFailure(f"{what}: rank {rank} waited ({waits[0].describe()}) before "
                           f"computing {task}: the transfer was over before the work began. "
                           f"Compute between posting and waiting")
