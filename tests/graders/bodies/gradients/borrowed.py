"""Wrong bodies that let the course's own code communicate for them: the reference solution
itself, or lesson 10's engine (labs/plans.py), which implements the same methods. Their
messages are exactly the method's; only the code that made them is not the learner's.

(Lesson `gradients`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/borrowed.py.)
"""
from solutions import gradients


def ring_avg_calls_the_reference(model):
    gradients.average_gradients_ring(model)

