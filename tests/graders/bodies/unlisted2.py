"""Wrong bodies of the second round: the kinds unlisted.py did not cover. Each is a class of
mistake, caught in general (from the record, the reference and the harness's properties),
not because this file lists it.

  1. communication where the record did not look (a thread of the body's own);
  2. a method that never has to happen (comparisons that bound messages from above only);
  3. the method on some cases only (large tensors, world sizes beyond 4);
  4. waiting (requests handed back in part, is_completed polling);
  5. buffers that live on for some cases only;
  6. values that do not prove communication (a clock started after the send);
  7. a contract that raises: data moved first, or a collective instead of the refusal.
"""
import threading
import time

import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_all_gather = copies.collectives.p2p_all_gather
reference_broadcast = copies.collectives.p2p_broadcast
reference_exchange = copies.deadlocks.exchange_batched
reference_pass_token = copies.p2p.pass_token
reference_ring = copies.ring.ring_all_reduce
reference_shift = copies.waiting.safe_ring_shift


def _pg():
    return dist.distributed_c10d._get_default_group()


def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, n, (rank + 1) % n, (rank - 1) % n


def _in_thread(fn, *args):
    """Run fn(*args) in a thread of our own, and wait for it."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)))
    worker.start()
    worker.join()
    return out[0] if out else None


# 1. in a thread of the body's own ----------------------------------------------------------

def ring_thread_pg_allreduce(tensor):
    """The process group's all_reduce, called from a helper thread."""
    _in_thread(lambda: _pg().allreduce([tensor]).wait())
    return tensor


def rs_thread_all_reduce(tensor):
    """ring_reduce_scatter's values from a built-in all_reduce in a helper thread."""
    _in_thread(lambda: _pg().allreduce([tensor]).wait())
    rank, n, _, _ = _ring()
    from labs.ring import chunk_bounds
    start, stop = chunk_bounds(tensor.numel(), n)[rank]
    return tensor.view(-1)[start:stop]


def broadcast_thread(tensor, src):
    """p2p_broadcast through the built-in broadcast, in a helper thread."""
    _in_thread(lambda: dist.broadcast(tensor, src))
    return tensor


def shift_thread_all_to_all(tensor):
    """safe_ring_shift through all_to_all_single in a helper thread."""
    rank, n, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    numel = tensor.numel()
    _in_thread(lambda: dist.all_to_all_single(
        out.view(-1), tensor.reshape(-1).contiguous(),
        output_split_sizes=[numel if p == prev else 0 for p in range(n)],
        input_split_sizes=[numel if p == nxt else 0 for p in range(n)]))
    return out


# 3. the method on some cases only ----------------------------------------------------------

def ring_builtin_when_large(tensor):
    """The ring up to 5000 elements, dist.all_reduce above."""
    if tensor.numel() > 5000:
        dist.all_reduce(tensor)
        return tensor
    return reference_ring(tensor)


def all_gather_builtin_beyond_4(tensor):
    """The ring up to 4 ranks; dist.all_gather from 5 on."""
    if dist.get_world_size() <= 4:
        return reference_all_gather(tensor)
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return out


def pass_token_builtin_at_6(token):
    """The ring, except with exactly 6 ranks: a broadcast and local arithmetic."""
    rank, n, _, _ = _ring()
    if n != 6:
        return reference_pass_token(token)
    held = token.clone()
    dist.broadcast(held, 0)
    return held + (sum(range(n)) if rank == 0 else sum(range(rank + 1)))


def broadcast_builtin_beyond_4(tensor, src):
    if dist.get_world_size() > 4:
        dist.broadcast(tensor, src)
        return tensor
    return reference_broadcast(tensor, src)


# 4. waiting -------------------------------------------------------------------------------------

def rotate_returns_receives_only(k, v):
    """Hands back the receives' requests only: nobody ever waits for the sends."""
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works[2:]


def rotate_waits_sends_inside(k, v):
    """Waits for the sends inside (through the request under the course's wrapper) and
    hands back the receives: the caller cannot compute while K and V travel."""
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    for work in works[:2]:
        getattr(work, "_work", work).wait()
    return k_next, v_next, works[2:]


def shift_polls_is_completed(tensor):
    """Polls is_completed() instead of wait(): on gloo it never turns True by itself."""
    rank, n, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    while not all(w.is_completed() for w in works):
        time.sleep(0.001)
    return received


# 5. buffers that live on, for some cases only -------------------------------------------------

_BIG = {}


def shift_cached_when_large(tensor):
    """Receives large tensors into a buffer it keeps ("for speed"): the next large call
    overwrites the last result."""
    if tensor.numel() < 50_000:
        return reference_shift(tensor)
    rank, n, nxt, prev = _ring()
    received = _BIG.setdefault(tensor.dtype, torch.empty(1 << 21, dtype=tensor.dtype))
    received = received[:tensor.numel()].view(tensor.shape)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                        dist.P2POp(dist.irecv, received, prev)]):
        work.wait()
    return received


_SLOTS = {}


def all_gather_views_of_kept_buffer(tensor):
    """Returns views into one buffer it keeps per dtype, for tensors of 1000+ elements."""
    if tensor.numel() < 1000:
        return reference_all_gather(tensor)
    n = dist.get_world_size()
    flat = _SLOTS.setdefault(tensor.dtype, torch.empty(n * 4096, dtype=tensor.dtype))
    out = [flat[i * 4096:i * 4096 + tensor.numel()].view(tensor.shape) for i in range(n)]
    for slot, got in zip(out, reference_all_gather(tensor)):
        slot.copy_(got)
    return out


# 6. values that do not prove communication ------------------------------------------------------

def ping_pong_clock_after_send(tensor, rounds):
    """Starts each round's clock once the send has returned: the send is not timed."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            dist.send(current, dst=1)
            t0 = time.perf_counter()
            dist.recv(reply, src=1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        return received
    return None


# 7. a contract that raises ------------------------------------------------------------------

def checked_shape_after_data(tensor, peer):
    """Compares numel and dtype first, but the shape only after the data has moved."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                        dist.P2POp(dist.irecv, theirs, peer)]):
        work.wait()
    shape, dtype = decode_meta(theirs)
    numel = torch.Size(shape).numel()
    if numel != tensor.numel() or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer} has {shape} {dtype}")
    received = reference_exchange(tensor, peer)
    if shape != tuple(tensor.shape):
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer} has {shape} {dtype}")
    return received


def ring_falls_back_to_builtin(tensor):
    """The ring, and dist.all_reduce whenever the ring raises (a non-contiguous tensor)."""
    try:
        return reference_ring(tensor)
    except ValueError:
        dist.all_reduce(tensor)
        return tensor


def halving_falls_back_to_builtin(tensor):
    halving_doubling_all_reduce = copies.algorithms.halving_doubling_all_reduce
    try:
        return halving_doubling_all_reduce(tensor)
    except ValueError:
        dist.all_reduce(tensor)
        return tensor


# 2. data that never reaches the process group (the rendezvous store) --------------------------

def _store_all(tensor):
    """Every rank's tensor, through the rendezvous store: no process-group op at all."""
    import pickle
    store = dist.distributed_c10d._get_default_store()
    key = f"unlisted2/{_store_all.calls}"
    _store_all.calls += 1
    store.set(f"{key}/{dist.get_rank()}", pickle.dumps(tensor.clone()))
    return [pickle.loads(store.get(f"{key}/{r}")) for r in range(dist.get_world_size())]


_store_all.calls = 0


def ring_via_store(tensor):
    """The sum, every rank reading every rank's tensor from the store."""
    everyone = _store_all(tensor)
    total = everyone[0].clone()
    for other in everyone[1:]:
        total += other
    tensor.copy_(total)
    return tensor


def broadcast_via_store(tensor, src):
    tensor.copy_(_store_all(tensor)[src])
    return tensor
