"""Red team F: batching bodies."""
import torch
import torch.distributed as dist

from labs.batching import DATA_TAG, SIZE_TAG


def _wait(works):
    for w in works:
        w.wait()


def all_pairs_lengths_in_bytes(chunks):
    """WRONG: the 'length' message carries the chunk's size in BYTES, and the receiver
    divides by the element size: a partner that follows the contract (length = number of
    elements) and this body misread each other's lengths (x8 for int64)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    peers = [p for p in range(ws) if p != rank]
    if not peers:
        return received
    item = chunks[rank].element_size()
    mine = {p: torch.tensor([chunks[p].numel() * item], dtype=torch.int64) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(theirs[p].item()) // item, dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received


def neighbours_skip_empty(tensor):
    """RIGHT (debatable against the 'four ops in one batch' sentence): with an empty
    tensor there is nothing to move; returns two new empty tensors without communicating."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1 or tensor.numel() == 0:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % ws, (rank + 1) % ws
    a, b = torch.empty_like(tensor), torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, left),
                                  dist.P2POp(dist.isend, tensor, right),
                                  dist.P2POp(dist.irecv, a, left),
                                  dist.P2POp(dist.irecv, b, right)]))
    return a, b
