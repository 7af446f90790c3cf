"""Reference solutions for lesson 02 (labs/batching.py)."""
import torch
import torch.distributed as dist

from labs.batching import DATA_TAG, SIZE_TAG


def _wait_all(works):
    for work in works:
        work.wait()


def exchange_with_neighbours(tensor):
    """One batch: send to both neighbours, receive from both."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % world_size, (rank + 1) % world_size
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    # With 2 ranks left == right: two messages each way between the same pair. They match
    # in FIFO order, and both carry the same tensor, so either matching is right.
    _wait_all(dist.batch_isend_irecv([
        dist.P2POp(dist.isend, tensor, left),
        dist.P2POp(dist.isend, tensor, right),
        dist.P2POp(dist.irecv, from_left, left),
        dist.P2POp(dist.irecv, from_right, right),
    ]))
    return from_left, from_right


def ring_shift(tensor, k):
    """Send to rank + k, receive from rank - k (mod world size)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    k %= world_size
    if k == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    _wait_all(dist.batch_isend_irecv([
        dist.P2POp(dist.isend, tensor, (rank + k) % world_size),
        dist.P2POp(dist.irecv, out, (rank - k) % world_size),
    ]))
    return out


def all_pairs_exchange(chunks):
    """Phase 1: every length (SIZE_TAG); allocate; phase 2: every chunk (DATA_TAG)."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(world_size) if p != rank]
    received = [None] * world_size
    received[rank] = chunks[rank].clone()
    if not peers:
        return received          # batch_isend_irecv([]) would raise IndexError
    my_sizes = {p: torch.tensor([chunks[p].numel()], dtype=torch.int64) for p in peers}
    their_sizes = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    # Wait for the whole first batch: on NCCL a batch returns one Work, not one per op, so
    # waiting for "just the size receives" is not portable.
    _wait_all(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, my_sizes[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, their_sizes[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(their_sizes[p].item()), dtype=chunks[rank].dtype)
    _wait_all(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received
