"""Wrong bodies of the second round, part 4: the exercises the other files touch least
(the pipelined ring, the backward exchange, the neighbours, the overlap, the two-phase
exchange, snippet 3 and the tree).

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted5.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


def neighbours_right_twice(tensor):
    """Sends to the right neighbour twice and to nobody on the left; from_left is taken
    from what the right one sent (right values only when the ring has 2 ranks)."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    left, right = torch.empty_like(tensor), torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, left, prev),
                                  dist.P2POp(dist.irecv, right, prev)]))
    return left, right


def all_pairs_lengths_as_float(chunks):
    """The two phases, the lengths as float32."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, n = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(n) if p != rank]
    received = [c.clone() if i == rank else None for i, c in enumerate(chunks)]
    if not peers:
        return received
    sizes = {p: torch.zeros(1) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, torch.tensor([float(chunks[p].numel())]), p, tag=SIZE_TAG)
         for p in peers] + [dist.P2POp(dist.irecv, sizes[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(sizes[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received
