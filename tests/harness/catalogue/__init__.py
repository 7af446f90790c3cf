"""The catalogue of learner bodies the graders are proven on (tests/harness/test_graders.py):
WRONG, (grader, world size, body, what the failure must say), and RIGHT, (grader, world
size, body), a correct body in another style than solutions/. A body is
"<module>:<function>" in tests/graders/bodies/. The rounds, in the order they were written:
  lessons.py    the lessons' own wrong turns, the kinds no grader names, other roads
  red_teams.py  rounds 3 to 9: red teams that read the stubs, the graders and the bodies
  ours.py       rounds 10 to 15 and later: reductions, precision, layouts, our own kinds
  causes.py     issue 44: messages that name the cause, a correct body a probe rejected
  layouts.py    lesson 13: group vs global ranks, the dp group, one batch per exchange
"""
from tests.harness.catalogue import causes, layouts, lessons, ours, red_teams

WRONG = lessons.WRONG + red_teams.WRONG + ours.WRONG + causes.WRONG + layouts.WRONG
RIGHT = lessons.RIGHT + red_teams.RIGHT + ours.RIGHT + causes.RIGHT + layouts.RIGHT
