"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce


def _paired(send, peer, recv):
    """A blocking exchange with `peer`: the lower rank sends first (no batch)."""
    if dist.get_rank() < peer:
        dist.send(send, peer)
        dist.recv(recv, peer)
    else:
        dist.recv(recv, peer)
        dist.send(send, peer)


# RIGHT: the ring all-reduce with dist.isend / dist.irecv (no batch), waited each step.
def ar_isend_irecv(tensor):
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    b = chunk_bounds(flat.numel(), n)
    incoming = torch.empty(b[0][1] - b[0][0], dtype=flat.dtype)
    for step in range(2 * (n - 1)):
        s, r = b[(rank - step - 1) % n], b[(rank - step - 2) % n]
        if step >= n - 1:                     # the all-gather: step t = step - (n - 1)
            t = step - (n - 1)
            s, r = b[(rank - t) % n], b[(rank - t - 1) % n]
        into = incoming[:r[1] - r[0]] if step < n - 1 else flat[r[0]:r[1]]
        works = [dist.irecv(into, prev), dist.isend(flat[s[0]:s[1]], nxt)]
        for w in works:
            w.wait()
        if step < n - 1:
            flat[r[0]:r[1]] += into
    return tensor


# RIGHT: recursive doubling with blocking send/recv, the lower rank of a pair sending first.
def doubling_blocking_pairs(tensor):
    from labs.algorithms import fold_in, fold_out
    flat = tensor.view(-1)
    rank, p = dist.get_rank(), dist.get_world_size()
    q = 1 << (p.bit_length() - 1)
    if p > 1 and fold_in(flat):
        incoming = torch.empty_like(flat)
        mask = 1
        while mask < q:
            _paired(flat, rank ^ mask, incoming)
            flat += incoming
            mask <<= 1
    if p > 1:
        fold_out(flat)
    return tensor


# RIGHT: the tree broadcast with non-blocking forwards, all waited at the end.
def tree_isend_children(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.recv(tensor, (v - (1 << (v.bit_length() - 1)) + src) % p)
    works, mask = [], 1 << v.bit_length()
    while v + mask < p:
        works.append(dist.isend(tensor, (v + mask + src) % p))
        mask <<= 1
    for w in works:
        w.wait()
    return tensor


# RIGHT: the ring average of gradients through torch's own flatten helpers.
def ring_avg_flatten_dense(model):
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.grad.dtype, []).append(p)
    for params in by_dtype.values():
        grads = [p.grad for p in params]
        flat = _flatten_dense_tensors(grads)
        ring_all_reduce(flat)     # lesson 05's (solved: the reference stands in for it)
        flat /= dist.get_world_size()
        for g, new in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(new)


# RIGHT: ping-pong with isend / irecv, each waited at once (the same rendezvous).
def ping_pong_isend_irecv(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank > 1:
        return None
    out, seconds, current = [], [], tensor
    for _ in range(rounds):
        buf = torch.empty_like(tensor)
        if rank == 0:
            t0 = time.perf_counter()
            dist.isend(current, 1).wait()
            dist.irecv(buf, 1).wait()
            seconds.append(time.perf_counter() - t0)
            out.append(buf)
            current = buf
        else:
            dist.irecv(buf, 0).wait()
            out.append(buf)
            dist.isend(buf + 1, 0).wait()
    return (out, seconds) if rank == 0 else out


# RIGHT: the token with a tag of its own on every message, the last rank sending first
# being impossible (it has nothing yet): 0 sends, the others receive, add, forward.
def pass_token_tagged(token):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    held = torch.zeros_like(token)
    if rank == 0:
        dist.send(token.clone(), (rank + 1) % ws, tag=7)
        dist.recv(held, (rank - 1) % ws, tag=7)
        return held
    dist.recv(held, (rank - 1) % ws, tag=7)
    held.add_(rank)
    dist.send(held, (rank + 1) % ws, tag=7)
    return held


# RIGHT: the safe shift with the receive first in the batch, waited in reverse order.
def shift_recv_first(tensor):
    rank, n = dist.get_rank(), dist.get_world_size()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, (rank - 1) % n),
                                    dist.P2POp(dist.isend, tensor, (rank + 1) % n)])
    for w in reversed(works):
        w.wait()
    return out


# RIGHT: the reduce-scatter's result as flat.narrow(...) (a view, like slicing).
def rs_narrow(tensor):
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    b = chunk_bounds(flat.numel(), n)
    if n == 1:
        return flat.narrow(0, 0, flat.numel())
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for step in range(n - 1):
        (s0, s1), (r0, r1) = b[(rank - step - 1) % n], b[(rank - step - 2) % n]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[s0:s1], nxt),
                                         dist.P2POp(dist.irecv, incoming, prev)]):
            w.wait()
        flat.narrow(0, r0, r1 - r0).add_(incoming)
    lo, hi = b[rank]
    return flat.narrow(0, lo, hi - lo)


# RIGHT: rotate_kv with k and v packed in one P2POp list built in a loop, receives first.
def rotate_kv_loop(k, v):
    rank, n = dist.get_rank(), dist.get_world_size()
    fresh = [torch.empty_like(k), torch.empty_like(v)]
    ops = [dist.P2POp(dist.irecv, t, (rank - 1) % n) for t in fresh] + \
          [dist.P2POp(dist.isend, t, (rank + 1) % n) for t in (k, v)]
    return fresh[0], fresh[1], dist.batch_isend_irecv(ops)


# RIGHT: halving-doubling with fresh receive buffers and the halves found by index arithmetic.
def hd_fresh_buffers(tensor):
    from labs.algorithms import fold_in, fold_out
    flat = tensor.view(-1)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if fold_in(flat):
        b = chunk_bounds(flat.numel(), q)
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            ks, ke = b[keep[0]][0], b[keep[1] - 1][1]
            gs, ge = b[give[0]][0], b[give[1] - 1][1]
            got = torch.empty(ke - ks, dtype=flat.dtype)
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[gs:ge], rank ^ mask),
                                             dist.P2POp(dist.irecv, got, rank ^ mask)]):
                w.wait()
            flat[ks:ke] += got
            steps.append((rank ^ mask, (ks, ke), (gs, ge)))
            lo, hi = keep
            mask //= 2
        for peer, (ks, ke), (gs, ge) in reversed(steps):
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[ks:ke], peer),
                                             dist.P2POp(dist.irecv, flat[gs:ge], peer)]):
                w.wait()
    fold_out(flat)
    return tensor
