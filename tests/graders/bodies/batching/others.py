"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 02 ------------------------------------------------------------------------------------

def neighbours_staged_group_peer(tensor):
    """group_peer instead of peer, through a contiguous staging copy, receives first."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    world = dist.group.WORLD
    staged = tensor.contiguous().clone()
    left, right = torch.empty(tensor.shape, dtype=tensor.dtype), torch.empty(
        tensor.shape, dtype=tensor.dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, right, group=world, group_peer=nxt),
                                  dist.P2POp(dist.irecv, left, group=world, group_peer=prev),
                                  dist.P2POp(dist.isend, staged, group=world, group_peer=nxt),
                                  dist.P2POp(dist.isend, staged, group=world, group_peer=prev)]))
    return left, right


def ring_shift_normalised_isend(tensor, k):
    """k normalised to the shorter way round, isend/irecv, the receive posted first."""
    rank, n = dist.get_rank(), dist.get_world_size()
    k %= n
    if k == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    receive = dist.irecv(out, (rank - k + n) % n)
    send = dist.isend(tensor, (rank + k) % n)
    list(map(lambda w: w.wait(), (send, receive)))
    return out


def all_pairs_receives_first_monitored(chunks):
    """The two phases, receives before sends, a monitored barrier at the end; wrong on a
    strided chunk (sent as is)."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, n = dist.get_rank(), dist.get_world_size()
    received = [c.clone() if i == rank else None for i, c in enumerate(chunks)]
    peers = [p for p in range(n) if p != rank]
    if peers:
        sizes = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
        mine = {p: torch.tensor([chunks[p].numel()]) for p in peers}
        _wait(dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, sizes[p], p, tag=SIZE_TAG) for p in peers]
            + [dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]))
        for p in peers:
            received[p] = chunks[rank].new_empty(int(sizes[p]))
        _wait(dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]
            + [dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]))
    dist.monitored_barrier()
    return received
