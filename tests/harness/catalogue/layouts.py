"""Lesson 13 (pp_dp_step): a rank number from the wrong numbering, the average over the wrong
group, an exchange without its batch or cut in two; a correct body in another style
(tests/graders/bodies/layouts/__init__.py)."""
from tests.graders import test_layouts
from tests.harness.catalogue.messages import BORROWED

L = "layouts:"
# A global rank as group_peer names another member (here the rank itself) or none at all; at
# 2 and 3 ranks (one pipeline, no replicas) both numberings agree and the bug is invisible.
WRONG = [(test_layouts.test_pp_dp_step, ws, L + "global_rank_as_group_peer",
          ("sent to or received from itself", "is not part of group")) for ws in (4, 6)]
WRONG += [
    (test_layouts.test_pp_dp_step, 4, L + "world_all_reduce", "mean over the WORLD"),
    (test_layouts.test_pp_dp_step, 2, L + "world_all_reduce", "mean over the WORLD"),
    (test_layouts.test_pp_dp_step, 4, L + "no_batch", "outside batch_isend_irecv"),
    (test_layouts.test_pp_dp_step, 4, L + "two_batches", "sent 2 message(s) to rank 2"),
    # the course's own code sending for the body: the reference, or a function of the lesson's
    # (scan() finds lesson 13's communicating demonstrations, cycle_fixed among them)
    (test_layouts.test_pp_dp_step, 4, L + "calls_the_reference", BORROWED),
    (test_layouts.test_pp_dp_step, 4, L + "borrows_the_lessons_cycle_fixed", BORROWED),
]
RIGHT = [(test_layouts.test_pp_dp_step, ws, L + "global_peers_divide_first") for ws in (4, 6)]
