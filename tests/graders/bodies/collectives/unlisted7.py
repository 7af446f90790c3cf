"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import large_world as _large

reference_all_to_all = copies.collectives.p2p_all_to_all


def all_to_all_builtin_beyond_4(outputs, inputs):
    if not _large():
        return reference_all_to_all(outputs, inputs)
    dist.all_to_all(outputs, inputs)
    return outputs
