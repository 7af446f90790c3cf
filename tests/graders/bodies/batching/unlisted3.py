"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 02 ------------------------------------------------------------------------------------

def neighbours_float_as_int(tensor):
    """The bytes of a float tensor moved as integers of the same width."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    wire = tensor.view(as_int) if tensor.is_floating_point() else tensor
    left, right = torch.empty_like(wire), torch.empty_like(wire)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, prev),
                                  dist.P2POp(dist.isend, wire, nxt),
                                  dist.P2POp(dist.irecv, left, prev),
                                  dist.P2POp(dist.irecv, right, nxt)]))
    return left.view(tensor.dtype), right.view(tensor.dtype)


def ring_shift_any_source(tensor, k):
    """One send to rank + k, and a receive from whoever sends: right values, any source."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if k % n == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    send = dist.isend(tensor, (rank + k) % n)
    dist.recv(out)
    send.wait()
    return out


def all_pairs_sizes_by_object(chunks):
    """The lengths through all_gather_object, the chunks point to point."""
    rank, n = dist.get_rank(), dist.get_world_size()
    sizes = [None] * n
    dist.all_gather_object(sizes, [c.numel() for c in chunks])
    received = [None] * n
    received[rank] = chunks[rank].clone()
    ops = []
    for peer in range(n):
        if peer != rank:
            received[peer] = torch.empty(sizes[peer][rank], dtype=chunks[rank].dtype)
            ops += [dist.P2POp(dist.isend, chunks[peer], peer, tag=2),
                    dist.P2POp(dist.irecv, received[peer], peer, tag=2)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return received
