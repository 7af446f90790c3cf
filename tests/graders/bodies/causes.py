"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected."""
import torch
import torch.distributed as dist

from labs.gradients import plan_buckets
from solutions.ring import ring_all_reduce


def _divided_first(grads):
    """Flatten `grads` in the order given, divide by W, then the ring: the mean arrives."""
    flat = torch.cat([g.reshape(-1) for g in grads]) / dist.get_world_size()
    ring_all_reduce(flat)
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


# ---- average_gradients_bucketed: dividing before the ring is right ---------------------------

def bucketed_divides_first(model, bucket_bytes):
    """Correct: the plan's buckets, each flattened in the plan's (backward) order and divided
    by W before the ring."""
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        _divided_first([p.grad for p in bucket])


def bucketed_divides_first_forward(model, bucket_bytes):
    """Correct: the same, each bucket flattened in forward order."""
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        _divided_first([p.grad for p in reversed(bucket)])


# ---- rotate_kv: right on gloo, wrong on NCCL ---------------------------------------------------

def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return (rank + 1) % n, (rank - 1) % n


def rotate_tags_reordered(k, v):
    """K and V told apart by tags, the receives posted v first: gloo pairs by tag (right),
    NCCL by order (k arrives in v_next)."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt, tag=1),
                                    dist.P2POp(dist.isend, v, nxt, tag=2),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=2),
                                    dist.P2POp(dist.irecv, k_next, prev, tag=1)])
    return k_next, v_next, works


def rotate_tags_sends_reordered(k, v):
    """The same the other way: the sends v first, the receives k first, tags to match."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, k_next, prev, tag=7),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=9),
                                    dist.P2POp(dist.isend, v, nxt, tag=9),
                                    dist.P2POp(dist.isend, k, nxt, tag=7)])
    return k_next, v_next, works


# ---- stateless bodies wrong on the first call: the fault is the value, not a kept result -----

def a2a_mean_without_own(model):
    """The mean of the peers' gradients only: the rank's own gradient left out of the sum."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [g.contiguous() for g in grads]
    inbox = [[torch.empty_like(g) for _ in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for g, bufs in zip(grads, inbox):
        total = sum(bufs[peer] for peer in range(ws) if peer != rank)
        g.copy_((total / ws).view_as(g))
    return None


def ring_floor_chunks(tensor):
    """Chunks of numel // n: the last numel % n elements are never reduced."""
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    q = flat.numel() // n
    nxt, prev = (rank + 1) % n, (rank - 1) % n

    def chunk(c):
        return flat[c * q:(c + 1) * q]
    for phase in range(2):
        for step in range(n - 1):
            out, into = chunk((rank - step - phase) % n), chunk((rank - step - 1 - phase) % n)
            inc = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, inc, prev)]):
                work.wait()
            into.add_(inc) if phase == 0 else into.copy_(inc)
    return tensor


def ring_gather_floor_bounds(tensor):
    """The reduce-scatter on chunk_bounds, then an all-gather on bounds of its own
    (c * numel // n): where those differ, it forwards elements no rank has finished."""
    from labs.ring import chunk_bounds
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    numel, nxt, prev = flat.numel(), (rank + 1) % n, (rank - 1) % n
    bounds = [flat[a:b] for a, b in chunk_bounds(numel, n)]
    for step in range(n - 1):
        out, into = bounds[(rank - step - 1) % n], bounds[(rank - step - 2) % n]
        inc = torch.empty_like(into)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                            dist.P2POp(dist.irecv, inc, prev)]):
            work.wait()
        into.add_(inc)

    def chunk(c):
        return flat[c * numel // n:(c + 1) * numel // n]
    for step in range(n - 1):
        out, into = chunk((rank - step) % n), chunk((rank - step - 1) % n)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                            dist.P2POp(dist.irecv, into, prev)]):
            work.wait()
    return tensor


# ---- what gloo does, in lesson 04's words --------------------------------------------------

def batched_default_dtype(tensor, peer):
    """The receive buffer made with torch.empty(shape): float32 whatever the tensor's dtype,
    smaller than a float64 or int64 message (gloo aborts the receiver)."""
    received = torch.empty(tensor.shape)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                        dist.P2POp(dist.irecv, received, peer)]):
        work.wait()
    return received.to(tensor.dtype)


def all_to_all_itself_included(outputs, inputs):
    """Every rank sends to every rank, itself included (gloo has no pair to itself)."""
    ws = dist.get_world_size()
    ops = [dist.P2POp(dist.irecv, outputs[p], p) for p in range(ws)] + \
        [dist.P2POp(dist.isend, inputs[p], p) for p in range(ws)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return outputs


def ring_chunks_counted_up(tensor):
    """The ring's route (to rank + 1), but the chunks counted up (rank + step): each rank
    forwards a chunk it has not added to yet."""
    from labs.ring import chunk_bounds
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for phase in range(2):
        for step in range(n - 1):
            out, into = chunks[(rank + step + phase) % n], chunks[(rank + step - 1 + phase) % n]
            inc = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, inc, prev)]):
                work.wait()
            into.add_(inc) if phase == 0 else into.copy_(inc)
    return tensor


# ---- average_gradients_ring: the dtype groups in any order (issue 52 item 8) -----------------

def ring_dtype_groups_reversed(model):
    """Correct: one ring per dtype, the groups in reverse name order (the same on every rank;
    the contract leaves the order free), each group's gradients flattened, summed, divided."""
    by_dtype: dict = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(str(p.grad.dtype), []).append(p.grad)
    for dtype in sorted(by_dtype, reverse=True):
        grads = by_dtype[dtype]
        flat = torch.cat([g.reshape(-1) for g in grads])
        ring_all_reduce(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
