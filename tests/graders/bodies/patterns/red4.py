"""Fourth red team (lesson 09, labs/patterns.py): the neighbour exchange and rotate_kv."""
import torch
import torch.distributed as dist


# WRONG: ungrouped isend then irecv on both sides (the notebook's NCCL hazard; contract: ONE batch)
def fwd_ungrouped(output, next_rank):
    grad = torch.empty_like(output)
    works = [dist.isend(output.detach().contiguous(), next_rank), dist.irecv(grad, next_rank)]
    for w in works:
        w.wait()
    return grad


# WRONG (borderline): batched but no .contiguous(): raises on a non-contiguous activation
def fwd_no_contiguous(output, next_rank):
    grad = torch.empty_like(output)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, output, next_rank),
                                     dist.P2POp(dist.irecv, grad, next_rank)]):
        w.wait()
    return grad


# RIGHT: receive posted first, tagged, new_empty, group=None
def fwd_recv_first(output, next_rank):
    grad = output.new_empty(output.shape)
    ops = [dist.P2POp(dist.irecv, grad, next_rank, group=None, tag=3),
           dist.P2POp(dist.isend, output.detach().contiguous(), next_rank, group=None, tag=3)]
    reqs = dist.batch_isend_irecv(ops)
    for r in reversed(reqs):
        r.wait()
    return grad


# RIGHT: rotate_kv sending clones (kept alive by the Work), recv buffers via zeros_like
def rotate_send_clones(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    kn, vn = torch.zeros_like(k), torch.zeros_like(v)
    ops = [dist.P2POp(dist.isend, k.clone(), nxt), dist.P2POp(dist.irecv, kn, prev),
           dist.P2POp(dist.isend, v.clone(), nxt), dist.P2POp(dist.irecv, vn, prev)]
    return kn, vn, dist.batch_isend_irecv(ops)


# WRONG: rotate_kv, v received into a buffer shaped like k then reshaped... no: v sent via k's dtype view
# WRONG: rotate_kv that sends k and v concatenated as one message when shapes allow, else separately
def rotate_packed_when_same(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    if k.shape == v.shape and k.dtype == v.dtype:
        packed = torch.stack([k, v])
        buf = torch.empty_like(packed)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, packed, nxt),
                                        dist.P2POp(dist.irecv, buf, prev)])
        return buf[0], buf[1], works
    kn, vn = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt), dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, kn, prev), dist.P2POp(dist.irecv, vn, prev)])
    return kn, vn, works


def fwd_ungrouped_contiguous(output, peer):
    """W: contiguous buffers, but isend then irecv outside a batch, the same order on both
    stages: gloo completes it; NCCL needs the pair grouped (lesson 09's ungrouped hazard)."""
    received = torch.empty(output.shape, dtype=output.dtype)
    works = [dist.isend(output.contiguous(), peer), dist.irecv(received, peer)]
    for work in works:
        work.wait()
    return received
