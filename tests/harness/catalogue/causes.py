"""Issue 44: messages that name the cause. Each wrong body fails saying what the learner's
code did, in the lesson's words (not a probe's internals, a signal or a C++ enforce line);
each correct body a probe once rejected passes (tests/graders/bodies/<lesson>/causes.py)."""
from tests.graders import (test_collectives, test_deadlocks, test_gradients, test_patterns,
                           test_ring)

WRONG: list = []
RIGHT: list = []

# A mean divides each bucket by the world size before the ring: the positional probe finds
# each element's position by its step from its neighbours, whatever the scale (it counted
# gradient pieces by whole-number values, which the division removes).
RIGHT += [(test_gradients.test_average_gradients_bucketed, ws, "gradients.causes:" + body)
          for body in ("bucketed_divides_first", "bucketed_divides_first_forward")
          for ws in (2, 3)]

# Issue 52 item 8: one ring per dtype, the groups in another order than the reference's, is
# right at every world size (the order check pairs messages within a dtype, not across calls).
RIGHT += [(test_gradients.test_average_gradients_ring, ws,
           "gradients.causes:ring_dtype_groups_reversed")
          for ws in (2, 4, 8)]

# Stateless bodies wrong on the first call: the value is the fault, not a result kept from an
# earlier call (the second call's check fired: the same values when only the data they leave
# out had changed). The check of the values speaks first.
WRONG += [(test_gradients.test_average_gradients_all_to_all, ws,
           "gradients.causes:a2a_mean_without_own", "is wrong at") for ws in (2, 3)]
WRONG += [(test_ring.test_ring_all_reduce, ws, "ring.causes:" + body, "is wrong at")
          for body in ("ring_floor_chunks", "ring_gather_floor_bounds") for ws in (2, 3)]

# What gloo does, in lesson 04's words (section 7: a receive buffer smaller than the message
# kills the receiver; section 6: no pair to the rank's own process), not a signal or an
# enforce line.
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.causes:batched_default_dtype",
     "received a message larger than its buffer"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.causes:all_to_all_itself_included",
     "sent to or received from itself"),
]

# rotate_kv must be right on NCCL, which ignores tags (lesson 02): K and V told apart by tags
# while the receives are posted in another order than the sends is right on gloo only.
WRONG += [(test_patterns.test_rotate_kv, ws, "patterns.causes:" + body,
           "once the tags were ignored")
          for body in ("rotate_tags_reordered", "rotate_tags_sends_reordered") for ws in (2, 3)]

# A tensor of fewer elements than ranks (shape (), (0,)) is never probed with another shape:
# a ring that goes wrong is told on the reader's own input, at the first case that shows it
# (the route, or the values), not by a probe of a call the reader never made.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.causes:ring_chunks_counted_up", "is wrong at"),
    (test_ring.test_ring_all_reduce, 3, "ring.styles:ring_counter_clockwise", "in the ring, rank"),
]
