"""Third red team (lesson 05, labs/ring.py): learner bodies, wrong and right."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


def _flat(tensor):
    if not tensor.is_contiguous():
        raise ValueError("the ring needs a contiguous tensor")
    return tensor.view(-1)


def pipelined_one_at_a_time_pg(tensor, segment_bytes=4 << 20):
    """W: segment-sized messages, but one segment at a time: receive, wait, add, forward,
    then the next receive: nothing on the wire while adding (no pipeline). Sent through the
    process group's own send/recv methods (pg.send / pg.recv, point-to-point)."""
    flat = _flat(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    pg = dist.distributed_c10d._get_default_group()
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())

    def segments(c):
        a0, b0 = bounds[c]
        return [(a, min(a + seg, b0)) for a in range(a0, b0, seg)]

    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = pg.send([flat[a:b]], nxt, 0)
    for t in range(2 * (n - 1)):
        for a, b in segments((rank - t - 2) % n):
            buf = torch.empty(b - a, dtype=flat.dtype)
            pg.recv([buf], prev, 0).wait()
            if (a, b) in sending:
                sending.pop((a, b)).wait()
            if t < n - 1:
                flat[a:b].add_(buf)
            else:
                flat[a:b].copy_(buf)
            if t + 1 < 2 * (n - 1):
                sending[(a, b)] = pg.send([flat[a:b]], nxt, 0)
    for w in sending.values():
        w.wait()
    return tensor


def pipelined_one_at_a_time(tensor, segment_bytes=4 << 20):
    """W (control): the same with dist.isend / dist.irecv."""
    flat = _flat(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())

    def segments(c):
        a0, b0 = bounds[c]
        return [(a, min(a + seg, b0)) for a in range(a0, b0, seg)]

    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for t in range(2 * (n - 1)):
        for a, b in segments((rank - t - 2) % n):
            buf = torch.empty(b - a, dtype=flat.dtype)
            dist.irecv(buf, prev).wait()
            if (a, b) in sending:
                sending.pop((a, b)).wait()
            if t < n - 1:
                flat[a:b].add_(buf)
            else:
                flat[a:b].copy_(buf)
            if t + 1 < 2 * (n - 1):
                sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for w in sending.values():
        w.wait()
    return tensor


def pipelined_send_waited_at_once(tensor, segment_bytes=4 << 20):
    """R: the reference pipeline (all receives first, each into its row of a fresh
    scratch), but each forward isend waited right away before the next receive is
    waited (every receive is already posted, so no deadlock)."""
    flat = _flat(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (n - 1)
    width = bounds[0][1] - bounds[0][0]
    scratch = torch.empty((steps, width), dtype=flat.dtype)

    def segments(c):
        a0, b0 = bounds[c]
        return [(a, min(a + seg, b0)) for a in range(a0, b0, seg)]

    plan, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        for a, b in segments(c):
            buf = scratch[t, a - bounds[c][0]:b - bounds[c][0]]
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    works = dist.batch_isend_irecv(ops) if ops else []
    for a, b in segments((rank - 1) % n):
        dist.isend(flat[a:b], nxt).wait()
    for (t, a, b, buf), w in zip(plan, works):
        w.wait()
        if t < n - 1:
            flat[a:b].add_(buf)
        else:
            flat[a:b].copy_(buf)
        if t + 1 < steps:
            dist.isend(flat[a:b], nxt).wait()
    return tensor


def ring_group_world(tensor):
    """R: the ring with an explicit group=dist.group.WORLD everywhere (ranks asked of the
    group), the receive listed first in each batch, torch.add(..., out=) for the adds."""
    g = dist.group.WORLD
    flat = _flat(tensor)
    rank, n = dist.get_rank(g), dist.get_world_size(g)
    if n == 1:
        return tensor
    b = chunk_bounds(flat.numel(), n)
    ch = lambda c: flat[b[c][0]:b[c][1]]  # noqa: E731
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for s in range(n - 1):
        out, tgt = ch((rank - s - 1) % n), ch((rank - s - 2) % n)
        inc = torch.empty_like(tgt)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, inc, prev, g),
                                         dist.P2POp(dist.isend, out, nxt, g)]):
            w.wait()
        torch.add(tgt, inc, out=tgt)
    for s in range(n - 1):
        for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, ch((rank - s - 1) % n), prev, g),
                                         dist.P2POp(dist.isend, ch((rank - s) % n), nxt, g)]):
            w.wait()
    return tensor


def rs_parity_blocking(tensor):
    """R: reduce-scatter with blocking send/recv, even ranks send first, odd receive first
    (rank 0 and rank n-1 both even when n is odd: rank n-1 sends to 0, which sends first to
    1 ... the chain unwinds from the odd ranks)."""
    flat = _flat(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    b = chunk_bounds(flat.numel(), n)
    ch = lambda c: flat[b[c][0]:b[c][1]]  # noqa: E731
    if n == 1:
        return ch(0)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for s in range(n - 1):
        out, tgt = ch((rank - s - 1) % n), ch((rank - s - 2) % n)
        inc = torch.empty_like(tgt)
        if rank % 2 == 0:
            dist.send(out, nxt)
            dist.recv(inc, prev)
        else:
            dist.recv(inc, prev)
            dist.send(out, nxt)
        tgt += inc
    return ch(rank)


def pipelined_blocking_forward(tensor, segment_bytes=4 << 20):
    """R: blocking dist.send forwards; the reference pipeline (all receives first, each
    into its row of a fresh scratch), but each forward waited right away before the next
    receive is waited (every receive is already posted, so no deadlock)."""
    flat = _flat(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (n - 1)
    width = bounds[0][1] - bounds[0][0]
    scratch = torch.empty((steps, width), dtype=flat.dtype)

    def segments(c):
        a0, b0 = bounds[c]
        return [(a, min(a + seg, b0)) for a in range(a0, b0, seg)]

    plan, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        for a, b in segments(c):
            buf = scratch[t, a - bounds[c][0]:b - bounds[c][0]]
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    works = dist.batch_isend_irecv(ops) if ops else []
    for a, b in segments((rank - 1) % n):
        dist.send(flat[a:b], nxt)
    for (t, a, b, buf), w in zip(plan, works):
        w.wait()
        if t < n - 1:
            flat[a:b].add_(buf)
        else:
            flat[a:b].copy_(buf)
        if t + 1 < steps:
            dist.send(flat[a:b], nxt)
    return tensor


