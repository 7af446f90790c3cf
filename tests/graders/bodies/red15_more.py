"""Round 15 (ours), part 2: lessons 04, 06 and 09, in kinds no list named (every dtype in
one float64 ring, DDP's first bucket, buckets in forward order, k and v in one message,
shapes compared by numel), and right bodies in styles the contracts allow."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _wait(works):
    for w in works:
        w.wait()


# ---- lesson 06 ------------------------------------------------------------------------

# RIGHT: the mean assigned as a new tensor (`p.grad = ...`): "replace every param.grad".
def a2a_assigns_new_grad(model):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    got = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = [op for g, bufs in zip(sent, got) for peer in range(ws) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    _wait(dist.batch_isend_irecv(ops))
    for p, bufs in zip(params, got):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad = (total / ws).view_as(p.grad)
    return None


# WRONG: the ring average with every dtype promoted into one float64 buffer and cast back
# ("one ring call instead of one per dtype").
def ring_avg_one_float64_buffer(model):
    params = [p for p in model.parameters() if p.grad is not None]
    if not params:
        return None
    flat = torch.cat([p.grad.reshape(-1).double() for p in params])
    ring_all_reduce(flat)
    flat /= dist.get_world_size()
    for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
        p.grad.copy_(piece.view_as(p.grad).to(p.grad.dtype))
    return None


# WRONG: DDP's default first bucket (1 MiB) where the docstring's plan has none.
def bucketed_ddp_first_bucket(model, bucket_bytes):
    params = [p for p in model.parameters() if p.grad is not None]
    for bucket in plan_buckets(params, bucket_bytes, first_bucket_bytes=1 << 20):
        grads = [p.grad for p in bucket]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    return None


# WRONG: buckets in forward order (the plan reversed: "same buckets, any order").
def bucketed_forward_order(model, bucket_bytes):
    params = [p for p in model.parameters() if p.grad is not None]
    for bucket in reversed(plan_buckets(params, bucket_bytes)):
        grads = [p.grad for p in bucket]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    return None


# ---- lesson 09 ------------------------------------------------------------------------

# WRONG: k and v concatenated into one message each way ("fewer messages").
def rotate_kv_one_message(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    both = torch.cat([k.reshape(-1), v.reshape(-1)])
    incoming = torch.empty_like(both)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, both, nxt),
                                    dist.P2POp(dist.irecv, incoming, prev)])
    k_next = incoming[:k.numel()].view(k.shape)
    v_next = incoming[k.numel():].view(v.shape)
    return k_next, v_next, works


# RIGHT: sends copies of k and v (the caller may then touch k and v at once).
def rotate_kv_sends_copies(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k.clone(), nxt),
                                    dist.P2POp(dist.isend, v.clone(), nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


# ---- lesson 04 ------------------------------------------------------------------------

# WRONG: shapes compared by numel only ((2, 3) against (3, 2) goes through).
def checked_numel_only(tensor, peer):
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if torch.Size(shape).numel() != tensor.numel() or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    received = torch.empty(shape, dtype=dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received.view(tensor.shape)


# RIGHT: the metadata exchanged with blocking calls in parity order, the data in one batch.
def checked_meta_by_parity(tensor, peer):
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    if dist.get_rank() % 2 == 0:
        dist.send(mine, peer)
        dist.recv(theirs, peer)
    else:
        dist.recv(theirs, peer)
        dist.send(mine, peer)
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received
