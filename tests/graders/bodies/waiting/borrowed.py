"""Wrong bodies that let the course's own code communicate for them: the reference solution
itself, or lesson 10's engine (labs/plans.py), which implements the same methods. Their
messages are exactly the method's; only the code that made them is not the learner's.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/borrowed.py.)
"""


def shift_calls_the_lesson(tensor):
    """Lesson 07's own ring shift, a demonstration in labs/collectives.py."""
    from labs.collectives import ring_shift
    return ring_shift(tensor)

