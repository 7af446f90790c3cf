"""Wrong bodies that let the course's own code communicate for them: the reference solution
itself, or lesson 10's engine (labs/plans.py), which implements the same methods. Their
messages are exactly the method's; only the code that made them is not the learner's.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/borrowed.py.)
"""
from labs import plans


def doubling_calls_the_engine(tensor):
    return plans.run_algorithm("doubling", tensor)


def halving_calls_the_engine(tensor):
    return plans.run_algorithm("halving-doubling", tensor)

