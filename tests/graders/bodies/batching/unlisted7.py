"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
import torch.distributed as dist

from tests.graders.bodies import copies


def neighbours_one_tensor_twice(tensor):
    """With 2 ranks left and right are the same rank: it returns one buffer twice."""
    exchange_with_neighbours = copies.batching.exchange_with_neighbours
    left, right = exchange_with_neighbours(tensor)
    return (left, left) if dist.get_world_size() == 2 else (left, right)


def neighbours_one_copy_twice_at_one_rank(tensor):
    """With one rank both neighbours are itself: one copy, returned as both."""
    exchange_with_neighbours = copies.batching.exchange_with_neighbours
    if dist.get_world_size() == 1:
        copy = tensor.clone()
        return copy, copy
    return exchange_with_neighbours(tensor)
