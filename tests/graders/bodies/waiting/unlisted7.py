"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import large_world as _large
reference_step = copies.waiting.overlapped_step
reference_shift = copies.waiting.safe_ring_shift


def shift_builtin_beyond_4(tensor):
    if not _large():
        return reference_shift(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    everyone = [torch.empty_like(tensor) for _ in range(n)]
    dist.all_gather(everyone, tensor)
    return everyone[(rank - 1) % n]


def step_blocking_beyond_4(block, weight, recv_buf):
    """Overlap up to 4 ranks; from 5 on, blocking transfers in parity order, then compute."""
    if not _large():
        return reference_step(block, weight, recv_buf)
    rank, n = dist.get_rank(), dist.get_world_size()
    ops = [dist.P2POp(dist.isend, block, (rank + 1) % n),
           dist.P2POp(dist.irecv, recv_buf, (rank - 1) % n)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return block @ weight
