"""Wrong bodies of the second round: the kinds unlisted.py did not cover. Each is a class of
mistake, caught in general (from the record, the reference and the harness's properties),
not because this file lists it.

  1. communication where the record did not look (a thread of the body's own);
  2. a method that never has to happen (comparisons that bound messages from above only);
  3. the method on some cases only (large tensors, world sizes beyond 4);
  4. waiting (requests handed back in part, is_completed polling);
  5. buffers that live on for some cases only;
  6. values that do not prove communication (a clock started after the send);
  7. a contract that raises: data moved first, or a collective instead of the refusal.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""

import torch.distributed as dist

from tests.graders.bodies import copies


def halving_falls_back_to_builtin(tensor):
    halving_doubling_all_reduce = copies.algorithms.halving_doubling_all_reduce
    try:
        return halving_doubling_all_reduce(tensor)
    except ValueError:
        dist.all_reduce(tensor)
        return tensor
