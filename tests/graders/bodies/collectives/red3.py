"""Third red team (lesson 07, labs/collectives.py): learner bodies, wrong and right."""
import torch
import torch.distributed as dist


def _one(op):
    for w in dist.batch_isend_irecv([op]):
        w.wait()


def broadcast_serial(tensor, src):
    """WRONG: the star, serialised: src posts one batch per peer and waits it before the
    next (W-1 round trips one after the other instead of all sends in flight at once)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for peer in range(ws):
            if peer != src:
                _one(dist.P2POp(dist.isend, tensor, peer))
    else:
        _one(dist.P2POp(dist.irecv, tensor, src))
    return tensor


def gather_serial(tensor, dst):
    """WRONG: dst receives from one peer at a time, a batch per peer, each waited before
    the next is posted."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _one(dist.P2POp(dist.isend, tensor, dst))
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    for peer in range(ws):
        if peer != dst:
            _one(dist.P2POp(dist.irecv, out[peer], peer))
    return out


def all_gather_step_tags(tensor):
    """RIGHT: the ring, each step's messages tagged with the step number."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    for step in range(ws - 1):
        works = dist.batch_isend_irecv([
            dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], (rank - 1) % ws, tag=step),
            dist.P2POp(dist.isend, out[(rank - step) % ws], (rank + 1) % ws, tag=step)])
        for w in works:
            w.wait()
    return out


def gather_root_at_ends(tensor, dst):
    """WRONG for a root in the middle: dst receives the others' tensors in rank order into a
    list of ws - 1 buffers and puts its own copy first when dst == 0, else last (right only
    when dst is 0 or world_size - 1, the roots a learner tries)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, dst)]):
            w.wait()
        return None
    peers = [p for p in range(ws) if p != dst]
    others = [torch.empty_like(tensor) for _ in peers]
    if peers:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, b, p)
                                         for b, p in zip(others, peers)]):
            w.wait()
    mine = tensor.clone()
    return [mine] + others if dst == 0 else others + [mine]
