"""Lesson 04: deadlock hazards. The worker functions notebook 04 launches.

Every pattern is a worker function `fn(rank, world_size, numel=10)`. Pairwise patterns pair
rank r with rank r ^ 1 (0-1, 2-3, ...): the even rank of a pair plays the sender. With an
odd world size the last rank has no partner and sits out.

    hangs:   head_to_head, ring_of_blocking_sends, unmatched_recv, tag_mismatch,
             mismatched_order
    errors:  send_to_self, blocking_send_to_self, smaller_recv_buffer (kills the receiver)
    silent:  larger_recv_buffer, other_dtype_same_bytes, float32_into_float64
    after a timeout: timeout_closes_pair
    PATTERNS: every pattern by name, for the explorer (labs.views.deadlocks), which runs
    any of them and shows the outcome and the per-rank timeline

Exercises (write the bodies; `make check` grades them):
    exchange_batched(tensor, peer)          the head-to-head exchange, safe: one batch
    exchange_parity_ordered(tensor, peer)   ... safe: even ranks send first, odd receive first
    checked_exchange(tensor, peer)          send shape/dtype first; ValueError on mismatch
"""
import datetime

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.gloo_text import gloo_message

# A demo that is meant to hang: gloo's own timeout (1.5 s, counted from the call that
# blocks) fires in the workers; the launch deadline (10 s) is only a safety net.
HANG = dict(timeout=10, pg_timeout=1.5)


def _partner(rank, world_size):
    """rank ^ 1, or None for the last rank of an odd world size."""
    peer = rank ^ 1
    return peer if peer < world_size else None


def _data(rank, numel, dtype=torch.float32):
    """What rank `rank` sends: 1000 * rank + 0, 1, 2, ... (every rank's data differs)."""
    return (torch.arange(numel) + 1000 * rank).to(dtype)


# -- 1. patterns that hang --------------------------------------------------------------------

def head_to_head(rank, world_size, numel=10):
    """Both ranks of a pair call blocking send first. On gloo a send returns only when the
    receiver has posted its recv, so neither reaches its recv: a deadlock, for any size."""
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    dist.send(_data(rank, numel), dst=peer)
    buf = torch.empty(numel)
    dist.recv(buf, src=peer)
    return {"expected": _data(peer, numel), "got": buf}


def ring_of_blocking_sends(rank, world_size, numel=10):
    """Every rank sends to the next rank, then receives from the previous one: a cycle of
    ranks each waiting for the next (with 2 ranks it is head_to_head)."""
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    dist.send(_data(rank, numel), dst=nxt)
    buf = torch.empty(numel)
    dist.recv(buf, src=prev)
    return {"expected": _data(prev, numel), "got": buf}


def unmatched_recv(rank, world_size, numel=10):
    """The sender sends one message; the receiver receives two. The receiver waits for
    ever; the sender, done, waits in the next collective (a barrier) for the receiver."""
    peer = _partner(rank, world_size)
    if peer is not None and rank % 2 == 0:
        dist.send(_data(rank, numel), dst=peer)
    elif peer is not None:
        for _ in range(2):
            dist.recv(torch.empty(numel), src=peer)
    dist.barrier()


def tag_mismatch(rank, world_size, numel=10):
    """The sender tags its message 1, the receiver waits for tag 2. gloo honours tags: the
    message never matches, both wait."""
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    if rank % 2 == 0:
        dist.send(_data(rank, numel), dst=peer, tag=1)
    else:
        dist.recv(torch.empty(numel), src=peer, tag=2)


def mismatched_order(rank, world_size, numel=10):
    """The sender sends a (tag 0) then b (tag 1); the receiver receives b first. Each
    blocking call waits for the other side's *other* call."""
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    a, b = torch.empty(numel), torch.empty(numel)
    if rank % 2 == 0:
        dist.send(_data(rank, numel), dst=peer, tag=0)
        dist.send(_data(rank, numel) + 0.5, dst=peer, tag=1)
    else:
        dist.recv(b, src=peer, tag=1)
        dist.recv(a, src=peer, tag=0)


# -- 2. patterns that fail at once ------------------------------------------------------------

def send_to_self(rank, world_size, numel=10):
    """isend to your own rank: gloo has no connection to yourself ("Pair is not connected")."""
    dist.isend(_data(rank, numel), dst=rank).wait()


def blocking_send_to_self(rank, world_size, numel=10):
    """Blocking send to your own rank: torch checks it first (ValueError)."""
    dist.send(_data(rank, numel), dst=rank)


def smaller_recv_buffer(rank, world_size, numel=10):
    """The receive buffer is smaller than the message: gloo's transport thread aborts the
    receiving process (SIGABRT). Nothing can catch it, not even try/except in the worker."""
    return _one_way(rank, world_size, numel, torch.full((numel // 2,), -1.0))


# -- 3. patterns that corrupt silently ---------------------------------------------------------

def _one_way(rank, world_size, numel, recv_buf):
    """Even rank sends `numel` float32 to its partner, which receives into `recv_buf`."""
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    if rank % 2 == 0:
        dist.send(_data(rank, numel), dst=peer)
        return None
    dist.recv(recv_buf, src=peer)
    return {"expected": _data(peer, numel), "got": recv_buf}


def larger_recv_buffer(rank, world_size, numel=10):
    """Receive buffer 2 elements longer (filled with -1): gloo fills a prefix, the tail keeps
    its old values, and nothing tells you."""
    return _one_way(rank, world_size, numel, torch.full((numel + 2,), -1.0))


def other_dtype_same_bytes(rank, world_size, numel=10):
    """float32 sent, int32 received: same byte count, the bits are reinterpreted."""
    return _one_way(rank, world_size, numel, torch.full((numel,), -1, dtype=torch.int32))


def float32_into_float64(rank, world_size, numel=10):
    """float32 sent into a float64 buffer of the same numel (filled with -1): the first half
    holds pairs of floats read as doubles, the second half is untouched. No error."""
    return _one_way(rank, world_size, numel, torch.full((numel,), -1.0, dtype=torch.float64))


# -- 4. why every hang demo gets fresh workers --------------------------------------------------

def timeout_closes_pair(rank, world_size):
    """Rank 0 waits 1 s for a message that never comes (work.wait(timeout=...)), catches the
    timeout and goes on using the pair: every later op with rank 1 fails at once.
    Rank 1 sits in a receive from rank 0 and sees the pair close. Returns what each saw."""
    if rank == 0:
        seen = []
        work = dist.irecv(torch.zeros(1), src=1, tag=5)        # rank 1 never sends tag 5
        try:
            work.wait(timeout=datetime.timedelta(seconds=1))
        except RuntimeError as exc:
            seen.append("wait(timeout=1 s): " + gloo_message(exc))
        for what, op in [("send to rank 1", lambda: dist.send(torch.ones(1), dst=1)),
                         ("barrier", dist.barrier)]:
            try:
                op()
                seen.append(f"{what}: ok")
            except RuntimeError as exc:
                seen.append(f"{what}: " + gloo_message(exc))
        return seen
    if rank == 1:
        try:
            dist.recv(torch.zeros(1), src=0)
            return ["recv from rank 0: ok"]
        except RuntimeError as exc:
            return ["recv from rank 0: " + gloo_message(exc).split(" [")[0]]
    return None


# -- 5. defences: the exercises ------------------------------------------------------------------

def exchange_blocking(tensor, peer):
    """The deadlocking schedule the exercises fix: both ranks of a pair run this."""
    received = torch.empty_like(tensor)
    dist.send(tensor, dst=peer)          # both ranks sit here: nobody has posted a recv
    dist.recv(received, src=peer)
    return received


@exercise
def exchange_batched(tensor, peer):
    """Exchange `tensor` with `peer` (both ranks call it, each with its own tensor of the
    same shape and dtype) using ONE dist.batch_isend_irecv call. Returns a new tensor
    holding the peer's tensor, complete on return; `tensor` is unchanged. Any size/dtype.

    Hint: two P2POps (an isend of `tensor`, an irecv into torch.empty_like(tensor)) in
    one list; then wait() for every Work the batch returns.
    """
    raise todo("notebook 04, 'Exercise 1: make the exchange safe, two ways'")


@exercise
def exchange_parity_ordered(tensor, peer):
    """The same exchange with blocking dist.send / dist.recv only, ordered by rank parity:
    even ranks send first, then receive; odd ranks receive first, then send (Megatron-LM
    orders its non-batched isend/irecv by the same parity; here the calls block). `peer`
    has the other parity (e.g. rank ^ 1, rank + 1). Returns a new tensor holding the
    peer's tensor; `tensor` is unchanged.

    Hint: dist.get_rank() % 2.
    """
    raise todo("notebook 04, 'Exercise 1: make the exchange safe, two ways'")


# Metadata for checked_exchange: [ndim, size_0, ..., size_7, dtype index] as int64.
MAX_DIMS = 8
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
          torch.complex128]


def encode_meta(tensor):
    """A fixed-size int64 tensor describing `tensor`'s shape and dtype (same size for every
    tensor, so the peer can always receive it)."""
    if tensor.dim() > MAX_DIMS:
        raise ValueError(f"encode_meta handles up to {MAX_DIMS} dimensions, got {tensor.dim()}")
    if tensor.dtype not in DTYPES:
        raise ValueError(f"encode_meta does not know dtype {tensor.dtype}")
    shape = list(tensor.shape) + [0] * (MAX_DIMS - tensor.dim())
    return torch.tensor([tensor.dim(), *shape, DTYPES.index(tensor.dtype)], dtype=torch.int64)


def decode_meta(meta):
    """(shape, dtype) back from encode_meta's tensor."""
    ndim = int(meta[0])
    return tuple(int(s) for s in meta[1:1 + ndim]), DTYPES[int(meta[-1])]


@exercise
def checked_exchange(tensor, peer):
    """Exchange `tensor` with `peer` like exchange_batched, but check first.

    Both ranks call it. First exchange the metadata (encode_meta(tensor): fixed size, so
    it always fits); if the peer's shape or dtype differs from ours, raise ValueError on
    BOTH ranks, before any data moves, with a message naming both shapes and both dtypes, in
    any wording: each shape as its sizes in order ((4,), [4], torch.Size([4]), 2x3 ...) and
    each dtype by name (float32 or torch.float32), e.g.
    "checked_exchange: rank 0 has (4,) torch.float32 but peer 1 has (5,) torch.float32".
    Otherwise exchange the data in ONE batch_isend_irecv call, as exchange_batched does,
    and return a new tensor holding the peer's tensor. Never hangs, never aborts, never
    returns silently wrong data.

    Hint: one batch for the metadata, decode_meta, compare, then one batch for the data.
    """
    raise todo("notebook 04, 'Exercise 2: a checked exchange'")


def exchange_run(rank, world_size, how="batched", numel=10):
    """Pairs exchange their data with `how` in "blocking" (hangs), "batched", "parity",
    "checked". Returns {"expected": peer's data, "got": what arrived}."""
    dist.barrier()                       # start together: comparable timelines
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    fn = {"blocking": exchange_blocking, "batched": exchange_batched,
          "parity": exchange_parity_ordered, "checked": checked_exchange}[how]
    return {"expected": _data(peer, numel), "got": fn(_data(rank, numel), peer)}


def checked_run(rank, world_size, mismatch=None, numel=10):
    """checked_exchange where odd ranks get it wrong: mismatch None, "shape" (one element
    more), "dtype" (float64). Returns {"expected", "got"} when it succeeds."""
    peer = _partner(rank, world_size)
    if peer is None:
        return None
    mine = _data(rank, numel + (1 if mismatch == "shape" and rank % 2 else 0))
    if mismatch == "dtype" and rank % 2:
        mine = mine.double()
    return {"expected": _data(peer, numel), "got": checked_exchange(mine, peer)}


def batched_pattern(rank, world_size, numel=10):
    """Exercise 1a on every pair (explorer pattern)."""
    return exchange_run(rank, world_size, "batched", numel)


def parity_pattern(rank, world_size, numel=10):
    """Exercise 1b on every pair (explorer pattern)."""
    return exchange_run(rank, world_size, "parity", numel)


def checked_pattern(rank, world_size, numel=10):
    """Exercise 2 on every pair, the odd rank's tensor one element longer."""
    return checked_run(rank, world_size, "shape", numel)


# -- 6. the explorer's catalogue --------------------------------------------------------------

PATTERNS = {
    "batched exchange (exercise 1)": batched_pattern,
    "parity-ordered exchange (exercise 1)": parity_pattern,
    "checked exchange, sizes differ (exercise 2)": checked_pattern,
    "head-to-head blocking sends": head_to_head,
    "ring of blocking sends": ring_of_blocking_sends,
    "unmatched recv": unmatched_recv,
    "tag mismatch": tag_mismatch,
    "mismatched op order": mismatched_order,
    "send to self": send_to_self,
    "recv buffer larger": larger_recv_buffer,
    "same bytes, other dtype": other_dtype_same_bytes,
    "float32 into float64": float32_into_float64,
    "recv buffer smaller": smaller_recv_buffer,
}


def explore_worker(rank, world_size, pattern, numel):
    """Run one pattern; the launcher hands back every rank's trace, also when it fails."""
    dist.barrier()   # start together, so the timeline's lanes line up
    return PATTERNS[pattern](rank, world_size, numel)


# -- command line / torchrun ------------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 04 demo: every rank exchanges with the next one in one batch (no deadlock)."""
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    got = torch.empty(3)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, _data(rank, 3), nxt),
                                     dist.P2POp(dist.irecv, got, prev)]):
        w.wait()
    return f"got {got.tolist()} from rank {prev}"


if __name__ == "__main__":
    cli.main(demo)
