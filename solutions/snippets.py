"""Reference solution for lesson 08 (labs/snippets.py)."""
import torch
import torch.distributed as dist


def fixed_ring_all_reduce(tensor):
    """world_size - 1 shifts around the ring; each step sends what arrived in the previous
    one into a fresh buffer, waits, and adds it up. In place; returns `tensor`."""
    world_size, rank = dist.get_world_size(), dist.get_rank()
    if world_size == 1:
        return tensor
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    acc = tensor.clone()
    outgoing = tensor.contiguous().clone()
    for _ in range(world_size - 1):
        incoming = torch.empty_like(outgoing)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, nxt),
                                       dist.P2POp(dist.irecv, incoming, prev)])
        for req in reqs:
            req.wait()
        acc += incoming
        outgoing = incoming
    tensor.copy_(acc)
    return tensor
