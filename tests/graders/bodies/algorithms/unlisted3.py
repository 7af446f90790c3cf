"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch.distributed as dist

from tests.graders.bodies import copies

reference_doubling = copies.algorithms.recursive_doubling_all_reduce


def _wait(works):
    for work in works:
        work.wait()


# lesson 10 ------------------------------------------------------------------------------------

def tree_star(tensor, src):
    """src sends to every rank: a star, p - 1 rounds."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == src:
        ops = [dist.P2POp(dist.isend, tensor, p) for p in range(n) if p != src]
    else:
        ops = [dist.P2POp(dist.irecv, tensor, src)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return tensor


def doubling_builtin_at_6(tensor):
    if dist.get_world_size() == 6:
        dist.all_reduce(tensor)
        return tensor
    return reference_doubling(tensor)


def halving_by_doubling(tensor):
    """Whole tensors each step: recursive doubling, not halving."""
    return reference_doubling(tensor)
