"""Wrong bodies that let the course's own code communicate for them: the reference solution
itself, or lesson 10's engine (labs/plans.py), which implements the same methods. Their
messages are exactly the method's; only the code that made them is not the learner's."""
from labs import plans
from solutions import collectives, gradients, ring


def ring_calls_the_reference(tensor):
    return ring.ring_all_reduce(tensor)


def ring_calls_the_engine(tensor):
    return plans.run_algorithm("ring", tensor)


def doubling_calls_the_engine(tensor):
    return plans.run_algorithm("doubling", tensor)


def halving_calls_the_engine(tensor):
    return plans.run_algorithm("halving-doubling", tensor)


def all_gather_calls_the_reference(tensor):
    """The reference, one call away: a helper of the learner's that calls it."""
    def gathered():
        return collectives.p2p_all_gather(tensor)
    return gathered()


def ring_avg_calls_the_reference(model):
    gradients.average_gradients_ring(model)


def shift_calls_the_lesson(tensor):
    """Lesson 07's own ring shift, a demonstration in labs/collectives.py."""
    from labs.collectives import ring_shift
    return ring_shift(tensor)

