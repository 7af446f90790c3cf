"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...).

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_a.py.)
"""

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


# -- lesson 02: all_pairs_exchange --------------------------------------------------------------

# RIGHT: the two phases, each one batch, with the peers in a rotated order (rank + 1,
# rank + 2, ...) and the receives posted before the sends in each batch.
def all_pairs_rotated(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [(rank + d) % ws for d in range(1, ws)]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    lengths = {p: torch.empty(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, lengths[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.isend, torch.tensor([chunks[p].numel()]), p, tag=SIZE_TAG)
           for p in peers]))
    for p in peers:
        received[p] = chunks[rank].new_empty(int(lengths[p]))
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]))
    return received


# WRONG: clamps what arrived into the dtype's finite range ("no inf in my activations"): a
# peer's inf comes back as the largest finite float, silently. No grader tensor holds inf.
def ring_shift_clamps_infinities(tensor, k):
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
                                  dist.P2POp(dist.irecv, out, (rank - k) % ws)]))
    if out.is_floating_point():
        info = torch.finfo(out.dtype)
        out = torch.clamp(out, info.min, info.max)
    return out


# WRONG: the two phases right, but each length is turned into a buffer size through float32
# (`lengths.float()` "to divide them up later"): any chunk above 2**24 elements gets a buffer
# of the wrong size. The grader's largest chunk holds 2**18 + 3 elements.
def all_pairs_lengths_through_float32(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    lengths = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, torch.tensor([chunks[p].numel()]), p, tag=SIZE_TAG)
         for p in peers] + [dist.P2POp(dist.irecv, lengths[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(lengths[p].float().item()), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received
