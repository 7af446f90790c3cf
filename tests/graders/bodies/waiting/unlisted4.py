"""Wrong bodies of the second round, part 3: a root that changes its role, waits that the
timeline did not see, and what a correct learner may still write around them.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted4.py.)
"""
import torch
import torch.distributed as dist


def _pg():
    return dist.distributed_c10d._get_default_group()


def _wait(works):
    for work in works:
        work.wait()


def step_pg_waits_first(block, weight, recv_buf):
    """The process group's own send/recv, waited BEFORE the product: no overlap."""
    rank, n = dist.get_rank(), dist.get_world_size()
    works = [_pg().send([block], (rank + 1) % n, 0), _pg().recv([recv_buf], (rank - 1) % n, 0)]
    _wait(works)
    return block @ weight


def step_pg_overlapped(block, weight, recv_buf):
    """Right: the process group's own send/recv posted, the product, then the waits.
    (Not the lesson's call, but the overlap the exercise asks for.)"""
    rank, n = dist.get_rank(), dist.get_world_size()
    works = [_pg().send([block], (rank + 1) % n, 0), _pg().recv([recv_buf], (rank - 1) % n, 0)]
    product = torch.mm(block, weight)
    _wait(works)
    return product
