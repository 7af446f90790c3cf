"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""

from tests.graders.bodies import copies
reference_forward = copies.patterns.send_forward_recv_backward


# lesson 09 ------------------------------------------------------------------------------------

def forward_in_float64(output, next_rank):
    """The activation widened to float64 on the wire."""
    if not output.is_floating_point():
        return reference_forward(output, next_rank)
    got = reference_forward(output.double(), next_rank)
    return got.to(output.dtype)
