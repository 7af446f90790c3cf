"""Red team I: lesson 07 bodies."""
import torch
import torch.distributed as dist


def _run(ops):
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()


def gather_own_slot_times_one(tensor, dst):
    """WRONG: dst's own slot is `tensor * 1` (a "copy"): for a bool tensor that is int64,
    not bool (and the stacked list no longer matches dist.gather). The contract says any
    dtype; the graders use float32, bfloat16, int64 only."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst] = tensor * 1
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return out


def gather_rows_view_minus_one(tensor, dst):
    """RIGHT (first filed as WRONG): dst receives into rows of one flat buffer,
    `flat.view(ws, -1)`, and returns clones reshaped. I expected view(ws, -1) to raise on a
    tensor with no elements; checked with a 2-rank gloo launch: it works (rows of shape
    (ws, 0)), so this body is right on empty tensors too."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    rows = torch.empty(ws * tensor.numel(), dtype=tensor.dtype).view(ws, -1)
    rows[dst].copy_(tensor.reshape(-1))
    _run([dist.P2POp(dist.irecv, rows[p], p) for p in range(ws) if p != dst])
    return [rows[r].clone().view(tensor.shape) for r in range(ws)]


def broadcast_reuses_last_tensor(tensor, src):
    """WRONG: non-src ranks receive into a scratch buffer and copy it in; the scratch is the
    caller's `tensor` of the previous call with this shape and dtype (kept, "it is free
    now"): the caller's earlier tensor is overwritten by a later broadcast."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    key = (tuple(tensor.shape), tensor.dtype)
    scratch = _KEPT.get(key)
    if scratch is None or scratch.data_ptr() == tensor.data_ptr():
        scratch = torch.empty_like(tensor)
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src])
    else:
        _run([dist.P2POp(dist.irecv, scratch, src)])
        tensor.copy_(scratch)
    _KEPT[key] = tensor
    return tensor


_KEPT = {}


def all_to_all_rotated_posts(outputs, inputs):
    """RIGHT: one batch; peers in rotated order (rank+1, rank+2, ...), every receive from
    rank-i posted before the send to rank+i; own slot copied last."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    ops = []
    for i in range(1, ws):
        ops.append(dist.P2POp(dist.irecv, outputs[(rank - i) % ws], (rank - i) % ws))
        ops.append(dist.P2POp(dist.isend, inputs[(rank + i) % ws], (rank + i) % ws))
    _run(ops)
    outputs[rank].copy_(inputs[rank])
    return outputs
