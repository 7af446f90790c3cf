"""Round 15 (ours): bodies for the exercises the catalogue held least of (lessons 02, 04, 07
and 10), in kinds no list named: another algorithm than the one the exercise asks for (a
chain, a two-way ring, a relay for some k), a result that replaces the caller's memory
instead of filling it, sizes sent in another dtype of the same width, requests waited on one
side only, the own slot handed back as the input itself, one batch per peer where the
contract says one.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_probe.py.)
"""
import torch
import torch.distributed as dist



def _run(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


# ---- lesson 02 ------------------------------------------------------------------------

# WRONG: the sizes travel as float64 (the same 8 bytes as int64; the docstring: int64).
def all_pairs_sizes_float64(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    mine = {p: torch.tensor([float(chunks[p].numel())], dtype=torch.float64) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.float64) for p in peers}
    _run([dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
         + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers])
    for p in peers:
        received[p] = torch.empty(int(theirs[p].item()), dtype=chunks[rank].dtype)
    _run([dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
         + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers])
    return received


# WRONG: with two ranks, one message each way, and the same tensor returned twice.
def neighbours_once_for_two(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % ws, (rank + 1) % ws
    if ws == 2:
        got = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, left), dist.P2POp(dist.irecv, got, left)])
        return got, got
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    _run([dist.P2POp(dist.isend, tensor, left), dist.P2POp(dist.isend, tensor, right),
          dist.P2POp(dist.irecv, from_left, left), dist.P2POp(dist.irecv, from_right, right)])
    return from_left, from_right


# WRONG: a shift by k relayed one hop at a time when k is small ("fewer long messages").
def shift_relayed_for_small_k(tensor, k):
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor.clone()
    if k > 2:
        out = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
              dist.P2POp(dist.irecv, out, (rank - k) % ws)])
        return out
    current = tensor.clone()
    for _ in range(k):
        nxt = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, current, (rank + 1) % ws),
              dist.P2POp(dist.irecv, nxt, (rank - 1) % ws)])
        current = nxt
    return current
