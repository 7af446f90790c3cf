"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_all_gather = copies.collectives.p2p_all_gather


def _wait(works):
    for work in works:
        work.wait()


# lesson 07 ------------------------------------------------------------------------------------

def broadcast_chain(tensor, src):
    """Right values, another method: a chain (each rank forwards once), not the star."""
    rank, n = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % n
    if v > 0:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor, (rank - 1) % n)]))
    if v < n - 1:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + 1) % n)]))
    return tensor


def gather_receives_in_reverse(tensor, dst):
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, dst)]))
        return None
    out = [tensor.clone() if r == dst else torch.empty_like(tensor) for r in range(n)]
    ops = [dist.P2POp(dist.irecv, out[r], r) for r in reversed(range(n)) if r != dst]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return out


def all_gather_with_barrier(tensor):
    out = reference_all_gather(tensor)
    dist.barrier()
    return out


def all_to_all_descending(outputs, inputs):
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    ops = []
    for peer in reversed(range(n)):
        if peer != rank:
            ops += [dist.P2POp(dist.irecv, outputs[peer], peer),
                    dist.P2POp(dist.isend, inputs[peer], peer)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return outputs
