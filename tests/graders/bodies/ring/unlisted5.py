"""Wrong bodies of the second round, part 4: the exercises the other files touch least
(the pipelined ring, the backward exchange, the neighbours, the overlap, the two-phase
exchange, snippet 3 and the tree).

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted5.py.)
"""

from tests.graders.bodies import copies

reference_pipelined = copies.ring.pipelined_ring_all_reduce
reference_ring = copies.ring.ring_all_reduce


def pipelined_plain_ring_for_integers(tensor, segment_bytes=4 << 20):
    """Segments for floating point; integers go round in whole chunks."""
    if tensor.is_floating_point():
        return reference_pipelined(tensor, segment_bytes)
    return reference_ring(tensor)
