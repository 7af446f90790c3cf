"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_early.py.)
"""

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


# -- RIGHT ------------------------------------------------------------------------------------

def all_pairs_zero_dim_lengths(chunks):
    """RIGHT: the two phases as the protocol says; each length travels as a 0-dim int64
    tensor (one element, SIZE_TAG), received into 0-dim buffers; chunks in a second batch."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [chunks[rank].clone() if i == rank else None for i in range(ws)]
    if not peers:
        return out
    lengths = {p: torch.tensor(chunks[p].numel(), dtype=torch.int64) for p in peers}
    theirs = {p: torch.tensor(0, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.isend, lengths[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        out[p] = chunks[rank].new_empty(int(theirs[p]))
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]))
    return out


def ring_shift_relays_long_shifts(tensor, k):
    """WRONG (relayed): shifts of at most 2 positions (either way) go straight to rank + k,
    longer ones are passed along one hop at a time. The graded k's never leave a residue
    of 3 .. world_size - 3 (k = 3 with 8 ranks: three hops through the ranks between)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    d = k % ws
    if d == 0:
        return tensor.clone()
    if d > ws // 2:
        d -= ws
    hops, step = ((1, d) if abs(d) <= 2 else (abs(d), 1 if d > 0 else -1))
    current = tensor
    for _ in range(hops):
        out = torch.empty_like(tensor)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, current, (rank + step) % ws),
                                      dist.P2POp(dist.irecv, out, (rank - step) % ws)]))
        current = out
    return current


def all_pairs_lengths_in_one_tensor(chunks):
    """RIGHT: the protocol as asked, with every length sent from (and received into) a view
    of one int64 tensor, one element per peer; all lengths waited, then the chunks batch."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [None] * ws
    out[rank] = chunks[rank].clone()
    if not peers:
        return out
    mine = torch.tensor([c.numel() for c in chunks], dtype=torch.int64)
    theirs = torch.zeros(ws, dtype=torch.int64)
    _wait(dist.batch_isend_irecv(
        [op for p in peers for op in (dist.P2POp(dist.isend, mine[p:p + 1], p, tag=SIZE_TAG),
                                      dist.P2POp(dist.irecv, theirs[p:p + 1], p, tag=SIZE_TAG))]))
    for p in peers:
        out[p] = torch.empty(int(theirs[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [op for p in peers for op in (dist.P2POp(dist.isend, chunks[p].contiguous(), p,
                                                 tag=DATA_TAG),
                                      dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG))]))
    return out


def neighbours_flips_send_in_flight(tensor):
    """WRONG (send buffer written in flight): one batch of four ops as asked, but the tensor
    sent is a private copy that is negated and negated back while both sends are in flight:
    gloo may read it negated (a 2-rank test corrupted 18 of 20 large transfers)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % ws, (rank + 1) % ws
    mine = tensor.clone()
    a, b = torch.empty_like(tensor), torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, left),
                                    dist.P2POp(dist.isend, mine, right),
                                    dist.P2POp(dist.irecv, a, left),
                                    dist.P2POp(dist.irecv, b, right)])
    if mine.is_floating_point():
        mine.neg_()
        mine.neg_()
    else:
        mine.bitwise_not_()
        mine.bitwise_not_()
    _wait(works)
    return a, b
