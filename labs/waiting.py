"""Lesson 03: waiting and overlap. The worker functions notebook 03 launches.

    barrier_is_not_wait     a barrier does not complete point-to-point work; wait() does
    reuse_after_recv_wait   in a batch, each Work guards its own buffer: waiting for the
                            receive says nothing about the send
    wait_twice              on gloo, wait() a Work once: a second wait() blocks until timeout
    racy_ring_shift         sending and receiving THE SAME tensor: a race, made reproducible
    safe_shift_run          runs exercise 1 (safe_ring_shift) with one slow rank
    overlap_timing          a matmul while a big transfer is in flight, vs one after the other
                            (interleaved repetitions, seconds of each)
    ring_matmul             double buffering: rotate blocks around the ring while computing

Exercises (write the bodies; `make check` grades them):
    safe_ring_shift(tensor)                       fix the racy shift with a second buffer
    overlapped_step(block, weight, recv_buf)      compute while a transfer is in flight
"""
import datetime
import time

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.gloo_text import gloo_message
from labs.harness.ranks.tracing import span


def _ring(rank, world_size):
    """(next rank, previous rank) on the ring 0 -> 1 -> ... -> world_size-1 -> 0."""
    return (rank + 1) % world_size, (rank - 1) % world_size


# -- 1. wait() vs barrier() -----------------------------------------------------------------

def barrier_is_not_wait(rank, world_size):
    """Every rank isends to the next rank, then barriers: is the send complete? No.

    The receives are posted only after a second barrier, i.e. after every rank has looked
    at its Work: gloo's send is a rendezvous, so no send can have completed at that point,
    whatever the timing. A barrier is a separate collective; it does not touch the
    point-to-point Works. Returns (completed after barrier, completed after wait, received).
    """
    nxt, prev = _ring(rank, world_size)
    send = dist.isend(torch.tensor([float(rank)]), dst=nxt)
    dist.barrier()
    after_barrier = send.is_completed()
    dist.barrier()                               # everyone has looked: now receive
    buf = torch.zeros(1)
    dist.irecv(buf, src=prev).wait()
    send.wait()
    return after_barrier, send.is_completed(), buf.item()


def barriers_returned_first(trace) -> bool:
    """Read from barrier_is_not_wait's trace: did every rank's first barrier return before
    the rank its isend goes to had posted the matching receive? Then the barrier returned
    while the send could not have completed (gloo's send needs its receive), whatever the
    timing. One clock for every rank (perf_counter), so the ranks' timestamps compare.
    (The notebook, through labs.views.waiting, and the claims ledger both read it here.)"""
    ranks = sorted({e.rank for e in trace})
    for rank in ranks:
        barrier = next(e for e in trace if e.rank == rank and e.op == "barrier")
        receiver = ranks[(ranks.index(rank) + 1) % len(ranks)]
        recv = next(e for e in trace if e.rank == receiver and e.op == "irecv" and e.peer == rank)
        if barrier.t_done is None or barrier.t_done >= recv.t_post:
            return False
    return True


# -- 2. which Work guards which buffer ------------------------------------------------------

def reuse_after_recv_wait(rank, world_size):
    """Rank 0 batches [isend a, irecv b] with rank 1, waits only for the receive, then
    reuses `a` for the next step. What does rank 1 get?

    Rank 1 is a late receiver: it sends first and posts its receive after a barrier, i.e.
    after rank 0 has overwritten `a`. Rank 0's receive completed, its send had not: the
    send leaves with the overwritten values. Returns what each rank received.
    """
    if rank > 1:
        dist.barrier()
        return None
    peer = 1 - rank
    if rank == 0:
        a, b = torch.full((4,), 1.0), torch.zeros(4)
        send, recv = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, peer),
                                             dist.P2POp(dist.irecv, b, peer)])
        recv.wait()                     # b may be read now ...
        a.fill_(-7.0)                   # ... but a is still owned by the pending send
        dist.barrier()
        send.wait()
        return b.tolist()
    dist.send(torch.full((4,), 2.0), dst=peer)
    dist.barrier()                      # receive only after rank 0 has touched a
    b = torch.zeros(4)
    dist.recv(b, src=peer)
    return b.tolist()


def wait_twice(rank, world_size):
    """Rank 1 calls wait() twice on one irecv Work: the second wait blocks until timeout.

    gloo counts completions per buffer and each wait() consumes one, so the second wait
    waits for a message that never comes. It gets its own 1 s timeout; the timeout then
    closes the pair, which rank 0 (blocked in a receive meant to keep it alive) sees as
    "Connection closed by peer". Returns what each rank saw.
    """
    if rank > 1:
        return None
    if rank == 0:
        dist.isend(torch.arange(3.0), dst=1).wait()
        try:
            dist.recv(torch.zeros(1), src=1, tag=1)     # nothing comes: rank 1 closes first
            return "rank 1 sent something"
        except RuntimeError as exc:
            return gloo_message(exc).split(" [")[0]
    work = dist.irecv(torch.zeros(3), src=0)
    work.wait()
    seen = ["first wait returned", f"is_completed(): {work.is_completed()}"]
    try:
        work.wait(timeout=datetime.timedelta(seconds=1))
        seen.append("second wait returned")
    except RuntimeError as exc:
        seen.append("second wait: " + gloo_message(exc))
    return seen


# -- 3. the race: one tensor sent and received ------------------------------------------------

LATE_TAG = 99   # the "you may go now" message of the reproducible race


def racy_ring_shift(rank, world_size, late_rank=None):
    """The widely copied shift: send `t` to the next rank and receive into THE SAME `t`.

    Rank r holds r + 1; a correct shift leaves rank r with the previous rank's value.
    gloo reads a send buffer when the receiver is ready, not when isend is called, so if a
    rank's receive lands first, its send carries the *received* value on.

    With `late_rank` set, the race is made reproducible: the rank before `late_rank` lets
    it post its ops only once its own receive has landed (a small message with tag
    LATE_TAG). That is exactly what a slow rank does at random on a real cluster. Ranks 1
    and 2 then always end with 1.0; rank 0 with 3.0 or 1.0, as rank 2's own send and receive
    race too. Returns this rank's value after the "shift".
    """
    nxt, prev = _ring(rank, world_size)
    t = torch.tensor([float(rank + 1)])
    if rank == late_rank:
        dist.recv(torch.zeros(1), src=prev, tag=LATE_TAG)      # wait to be let go
    send, recv = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, nxt),
                                         dist.P2POp(dist.irecv, t, prev)])
    recv.wait()
    if nxt == late_rank:
        dist.send(torch.zeros(1), dst=nxt, tag=LATE_TAG)       # my receive has landed in t
    send.wait()
    return t.item()


@exercise
def safe_ring_shift(tensor):
    """Return the previous rank's `tensor`: the ring shift without the race.

    Every rank calls it with a contiguous tensor of the same shape and dtype (any shape,
    float or integer). Send `tensor` to rank (rank + 1) % world_size and receive the tensor
    of rank (rank - 1) % world_size. Returns a NEW tensor (same shape and dtype) holding what was
    received, complete when the function returns. `tensor` itself must not change: the
    caller may reuse it as soon as the function returns. World size >= 2.

    Hint: receive into a second buffer (torch.empty_like), post both ops with
    dist.batch_isend_irecv, and wait for every Work it returns.
    """
    raise todo("notebook 03, 'Exercise 1: a safe ring shift'")


def safe_shift_run(rank, world_size, slow_rank=None):
    """Run exercise 1: rank r holds r + 1. `slow_rank` starts 0.2 s late, which gives a racy
    implementation every chance to show its race (a correct one does not care).
    Returns (received value, own value after the call)."""
    t = torch.tensor([float(rank + 1)])
    if rank == slow_rank:
        with span("slow start"):
            time.sleep(0.2)
    got = safe_ring_shift(t)
    return got.item(), t.item()


# -- 4. overlap computation with communication ------------------------------------------------

@exercise
def overlapped_step(block, weight, recv_buf):
    """One step of a ring pipeline: pass `block` on while computing with it.

    Send `block` to rank (rank + 1) % world_size and receive the previous rank's block
    into `recv_buf` (same shape and dtype as `block`, a different tensor), and compute
    `block @ weight` WHILE both transfers are in flight. Returns `block @ weight`. When it
    returns, `recv_buf` holds the previous rank's block and both transfers are complete;
    `block` is unchanged. World size >= 2; float32 or float64 blocks of shape (n, k),
    weight (k, m). The grader reads the order from the trace (it sees the matmul however
    you call it): non-blocking transfers posted, then the matmul, then the waits.

    Hint: post the transfers first (dist.batch_isend_irecv), then compute inside
    `with span("matmul"):` (it shows on the timeline), then wait for every Work.
    """
    raise todo("notebook 03, 'Exercise 2: compute while the block travels'")


MODES = ("transfer only", "matmul only", "serial", "overlapped")


def overlap_timing(rank, world_size, numel=4_000_000, size=800, reps=5):
    """Ranks 0 and 1 exchange `numel` floats and each computes a (size x size) matmul.

    transfer only / matmul only:  each part alone (the best overlap hides the shorter one)
    serial:      exchange, wait, then matmul
    overlapped:  post the exchange, matmul while it is in flight, then wait
    After a warm-up, the modes run round-robin (interleaved) `reps` times, each one started
    on both ranks together by a barrier, so a noisy moment hits every mode alike.
    Returns {"seconds": {mode: [seconds of each repetition]}, "same product": serial and
    overlapped computed the same, "received ok": every exchange delivered the peer's
    tensor}. Other ranks only keep step.
    """
    if rank > 1:                                # only ranks 0 and 1 take part ...
        for _ in range(len(MODES) * reps):
            dist.barrier()                      # ... the others just keep step
        return None
    peer = 1 - rank
    torch.manual_seed(rank)
    a, b = torch.randn(size, size), torch.randn(size, size)
    x, y = torch.full((numel,), float(rank)), torch.empty(numel)

    def post():
        return dist.batch_isend_irecv([dist.P2POp(dist.isend, x, peer),
                                       dist.P2POp(dist.irecv, y, peer)])

    for w in post():                            # warm-up: connect, fault in the pages
        w.wait()
    a @ b
    return _timed_modes(post, a, b, y, peer, reps)


def _timed_modes(post, a, b, y, peer, reps):
    """overlap_timing's measured part: every mode `reps` times, round-robin, both ranks
    started together; `post()` starts the exchange with `peer` that fills `y`."""
    times, products, received = {m: [] for m in MODES}, {}, {}
    for _ in range(reps):
        for mode in MODES:
            y.zero_()
            dist.barrier()                      # start both ranks together
            t0 = time.perf_counter()
            if mode == "overlapped":
                works = post()
                with span("matmul"):
                    products[mode] = a @ b      # runs while gloo's thread moves the bytes
                for w in works:
                    w.wait()
            else:
                if mode != "matmul only":
                    for w in post():
                        w.wait()
                if mode != "transfer only":
                    with span("matmul"):
                        products[mode] = a @ b
            times[mode].append(time.perf_counter() - t0)
            if mode != "matmul only":
                received[mode] = bool((y == peer).all())
    return {"seconds": times,
            "same product": torch.equal(products["serial"], products["overlapped"]),
            "received ok": all(received.values())}


def ring_matmul(rank, world_size, rows=2048, dim=256):
    """Double buffering: every rank computes X_j @ W for every rank's block X_j.

    The blocks travel around the ring; at each step a rank computes with the block it
    holds while passing it on (exercise 2, overlapped_step) and receiving the next block
    into its SECOND buffer. Then the two buffers swap roles: the one just sent is free
    (its send completed) and becomes the next receive buffer. Two buffers, never one
    tensor sent and received at once (the race of section 3), never a fresh allocation
    per step. Returns (products in rank order, all_gather of the local products).
    """
    torch.manual_seed(0)
    weight = torch.randn(dim, dim)              # the same on every rank
    torch.manual_seed(100 + rank)
    x = torch.randn(rows, dim)
    cur, spare = x.clone(), torch.empty_like(x)   # the two buffers
    dist.barrier()                                # start together: a readable timeline
    products = [None] * world_size
    for step in range(world_size):
        owner = (rank - step) % world_size        # whose block `cur` holds
        if step < world_size - 1:
            products[owner] = overlapped_step(cur, weight, spare)
            cur, spare = spare, cur               # received block next; old one is free
        else:
            with span("matmul"):
                products[owner] = cur @ weight    # the last block goes nowhere
    reference = [torch.empty(rows, dim) for _ in range(world_size)]
    dist.all_gather(reference, x @ weight)
    return torch.stack(products), torch.stack(reference)


# -- command line / torchrun -----------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 03 demo: a pending isend is still pending after a barrier; wait() completes it."""
    after_barrier, after_wait, got = barrier_is_not_wait(rank, world_size)
    return (f"completed after barrier: {after_barrier}, after wait: {after_wait}, "
            f"received {got:g}")


if __name__ == "__main__":
    cli.main(demo)
