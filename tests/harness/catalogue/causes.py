"""Issue 44: messages that name the cause. Each wrong body fails saying what the learner's
code did, in the lesson's words (not a probe's internals, a signal or a C++ enforce line);
each correct body a probe once rejected passes (tests/graders/bodies/causes.py)."""
from tests.graders import test_gradients

C = "causes:"
WRONG: list = []
RIGHT: list = []

# A mean divides each bucket by the world size before the ring: the positional probe finds
# each element's position by its step from its neighbours, whatever the scale (it counted
# gradient pieces by whole-number values, which the division removes).
RIGHT += [(test_gradients.test_average_gradients_bucketed, ws, C + body)
          for body in ("bucketed_divides_first", "bucketed_divides_first_forward")
          for ws in (2, 3)]
