"""Wrong bodies that let the course's own code communicate for them: the reference solution
itself, or lesson 10's engine (labs/plans.py), which implements the same methods. Their
messages are exactly the method's; only the code that made them is not the learner's.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/borrowed.py.)
"""
from solutions import collectives


def all_gather_calls_the_reference(tensor):
    """The reference, one call away: a helper of the learner's that calls it."""
    def gathered():
        return collectives.p2p_all_gather(tensor)
    return gathered()

