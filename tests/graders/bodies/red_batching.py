"""More probe bodies."""
import torch
import torch.distributed as dist
from labs.batching import DATA_TAG, SIZE_TAG


def _wait(works):
    for w in works:
        w.wait()


# ---------------------------------------------------------------- WRONG
def pairs_no_contiguous(chunks):
    """WRONG on strided chunks: the reference's two phases, without .contiguous() (a 1-D
    view like x[::2] is a valid chunk; gloo refuses to send it)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [None] * ws
    out[rank] = chunks[rank].clone()
    if not peers:
        return out
    mine = {p: torch.tensor([chunks[p].numel()]) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
                                 + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        out[p] = torch.empty(int(theirs[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]
                                 + [dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG) for p in peers]))
    return out


def pt_float32_add(token):
    """WRONG: each rank adds its rank in float32 and casts back (float64 / big int64 lose)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, 1)
        dist.recv(held, ws - 1)
        return held
    dist.recv(held, rank - 1)
    held = (held.float() + rank).to(token.dtype)
    dist.send(held, (rank + 1) % ws)
    return held


# ---------------------------------------------------------------- RIGHT
def pairs_one_flat_inbox(chunks):
    """RIGHT: every chunk received into its slice of ONE flat buffer (own copy included),
    the results returned as views side by side."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    dtype = chunks[rank].dtype
    if ws == 1:
        return [chunks[0].clone()]
    peers = [p for p in range(ws) if p != rank]
    lens = torch.zeros(ws, 1, dtype=torch.int64)
    lens[rank, 0] = chunks[rank].numel()
    sizes_out = [torch.tensor([chunks[p].numel()], dtype=torch.int64) for p in peers]
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, s, p, tag=SIZE_TAG) for s, p in zip(sizes_out, peers)]
        + [dist.P2POp(dist.irecv, lens[p], p, tag=SIZE_TAG) for p in peers]))
    inbox = torch.empty(int(lens.sum()), dtype=dtype)
    views = list(inbox.split(lens.flatten().tolist()))
    views[rank].copy_(chunks[rank])
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, views[p], p, tag=DATA_TAG) for p in peers]))
    return views


def nb_stacked_views(tensor):
    """RIGHT: both neighbours' tensors received into two views of one stacked buffer."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    box = torch.empty((2, *tensor.shape), dtype=tensor.dtype)
    if ws == 1:
        box[0].copy_(tensor)
        box[1].copy_(tensor)
        return box[0], box[1]
    left, right = (rank - 1) % ws, (rank + 1) % ws
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, left),
                                  dist.P2POp(dist.isend, tensor, right),
                                  dist.P2POp(dist.irecv, box[0], left),
                                  dist.P2POp(dist.irecv, box[1], right)]))
    return box[0], box[1]


def avg_ring_order(model):
    """RIGHT: peers visited in ring order from rank + 1 (a different order on each rank;
    each pair's messages stay in parameter order), mean via torch.stack(...).sum(0)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    peers = [(rank + i) % ws for i in range(1, ws)]
    inbox = {p: [torch.empty_like(q.grad) for q in params] for p in peers}
    ops = []
    for p in peers:
        for q, b in zip(params, inbox[p]):
            ops += [dist.P2POp(dist.irecv, b, p), dist.P2POp(dist.isend, q.grad, p)]
    for w in (dist.batch_isend_irecv(ops) if ops else []):
        w.wait()
    for k, q in enumerate(params):
        q.grad = torch.stack([q.grad] + [inbox[p][k] for p in peers]).sum(0) / ws
