"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
reference_exchange = copies.deadlocks.exchange_batched


def batched_builtin_at_8(tensor, peer):
    if dist.get_world_size() != 8:
        return reference_exchange(tensor, peer)
    everyone = [torch.empty_like(tensor) for _ in range(8)]
    dist.all_gather(everyone, tensor)
    return everyone[peer]
