"""Round 15 (ours), part 4: bodies right on a launch's first calls that change after a few
(the grader's first cases, or its call-twice check, see only the honest ones).

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_late.py.)
"""
import torch.distributed as dist

from tests.graders.bodies.ring.red14_styles import ar_isend_irecv as _ring

_CALLS = {"n": 0}


# WRONG: the ring for the first 5 calls of a launch, gloo's all_reduce after.
def ar_builtin_after_five(tensor):
    _CALLS["n"] += 1
    if _CALLS["n"] > 5:
        dist.all_reduce(tensor)
        return tensor
    return _ring(tensor)
