"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 07 ------------------------------------------------------------------------------------

def gather_by_object(tensor, dst):
    """p2p_gather through gather_object."""
    out = [None] * dist.get_world_size() if dist.get_rank() == dst else None
    dist.gather_object(tensor, out, dst=dst)
    return None if out is None else [t.clone() for t in out]


def all_gather_reversed_ring(tensor):
    """The ring the other way round: sends to rank - 1, receives from rank + 1."""
    rank, n, nxt, prev = _ring()
    out = [torch.empty_like(tensor) for _ in range(n)]
    out[rank].copy_(tensor)
    for step in range(n - 1):
        _wait(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, out[(rank + step) % n], prev),
            dist.P2POp(dist.irecv, out[(rank + step + 1) % n], nxt)]))
    return out


def all_to_all_per_peer_batches(outputs, inputs):
    """One batch per peer: right values, not ONE batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    for peer in range(n):
        if peer != rank:
            _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, inputs[peer], peer),
                                          dist.P2POp(dist.irecv, outputs[peer], peer)]))
    return outputs


# the process group's own methods: the lesson's batch never posted --------------------------

def _pg():
    return dist.distributed_c10d._get_default_group()


def broadcast_pg_methods(tensor, src):
    """src sends with the process group's send(), the others receive with its recv()."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for work in [_pg().send([tensor], peer, 0) for peer in range(n) if peer != src]:
            work.wait()
    else:
        _pg().recv([tensor], src, 0).wait()
    return tensor


def all_to_all_pg_methods(outputs, inputs):
    """Every pair through the process group's send() and recv(), no batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    works = []
    for peer in range(n):
        if peer != rank:
            works += [_pg().send([inputs[peer]], peer, 0), _pg().recv([outputs[peer]], peer, 0)]
    for work in works:
        work.wait()
    return outputs


def gather_builtin_when_large(tensor, dst):
    """P2P for small tensors, dist.gather from 100000 elements on."""
    p2p_gather = copies.collectives.p2p_gather
    if tensor.numel() < 100_000:
        return p2p_gather(tensor, dst)
    rank, n = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(n)] if rank == dst else None
    dist.gather(tensor, out, dst=dst)
    return out
