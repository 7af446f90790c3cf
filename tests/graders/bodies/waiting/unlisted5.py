"""Wrong bodies of the second round, part 4: the exercises the other files touch least
(the pipelined ring, the backward exchange, the neighbours, the overlap, the two-phase
exchange, snippet 3 and the tree).

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted5.py.)
"""
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


def step_dummy_compute_in_flight(block, weight, recv_buf):
    """The real product before posting; a small one "to overlap" while the data travels."""
    rank, n, nxt, prev = _ring()
    product = block @ weight
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    return product
