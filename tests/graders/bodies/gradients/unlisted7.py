"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
import torch.distributed as dist

from tests.graders.bodies import copies
reference_ring_avg = copies.gradients.average_gradients_ring


def ring_avg_builtin_at_7(model):
    if dist.get_world_size() != 7:
        return reference_ring_avg(model)
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= 7
