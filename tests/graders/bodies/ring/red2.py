"""Second red team (lesson 05, labs/ring.py): pipelined and plain ring bodies."""

import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies._shared import contiguous_flat as _check, ring_places as _ring


# ---- pipelined -------------------------------------------------------------------------

def _segments(bounds, seg):
    def segments(c):
        start, stop = bounds[c]
        return [(a, min(a + seg, stop)) for a in range(start, stop, seg)]
    return segments


def pipelined_step_synchronous(tensor, segment_bytes=4 << 20):
    """W: every receive posted first (as the hint says), but then the ring runs one whole
    STEP at a time: wait for every segment of the step, add them all, then isend them all.
    No segment is forwarded before its whole chunk is summed: no pipelining across hops."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    seg = max(1, segment_bytes // flat.element_size())
    segments = _segments(bounds, seg)
    steps = 2 * (n - 1)
    width = bounds[0][1] - bounds[0][0]
    scratch = torch.empty((steps, width), dtype=flat.dtype)
    plan, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        start = bounds[c][0]
        row = []
        for a, b in segments(c):
            buf = scratch[t, a - start:b - start]
            row.append((a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
        plan.append(row)
    works = dist.batch_isend_irecv(ops) if ops else []
    it = iter(works)
    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for t, row in enumerate(plan):
        mine = [next(it) for _ in row]
        for w in mine:                       # the whole step arrives first
            w.wait()
        for a, b, buf in row:
            if (a, b) in sending:
                sending.pop((a, b)).wait()
            if t < n - 1:
                flat[a:b].add_(buf)
            else:
                flat[a:b].copy_(buf)
        if t + 1 < steps:                    # then the whole step goes on
            for a, b, _ in row:
                sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for w in sending.values():
        w.wait()
    return tensor


def pipelined_window(tensor, segment_bytes=4 << 20):
    """R: the pipeline with a window of two receives in flight (the next segment's receive
    is posted before this one is waited), each segment forwarded as soon as it is summed."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    seg = max(1, segment_bytes // flat.element_size())
    segments = _segments(bounds, seg)
    steps = 2 * (n - 1)
    plan = [(t, a, b) for t in range(steps) for a, b in segments((rank - t - 2) % n)]
    bufs = [torch.empty(b - a, dtype=flat.dtype) for _, a, b in plan]
    posted = {}

    def post(i):
        if i < len(plan) and i not in posted:
            posted[i] = dist.irecv(bufs[i], prev)

    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    post(0)
    for i, (t, a, b) in enumerate(plan):
        post(i + 1)
        posted.pop(i).wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        if t < n - 1:
            flat[a:b] += bufs[i]
        else:
            flat[a:b].copy_(bufs[i])
        if t + 1 < steps:
            sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for w in sending.values():
        w.wait()
    return tensor


def pipelined_balanced_segments(tensor, segment_bytes=4 << 20):
    """R: as the reference, but each chunk cut into the fewest segments of at most
    segment_bytes, of (nearly) equal sizes (10 elements, at most 4: 4, 3, 3)."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    seg = max(1, segment_bytes // flat.element_size())

    def segments(c):
        start, stop = bounds[c]
        length = stop - start
        if length == 0:
            return []
        k = -(-length // seg)
        return [(start + s0, start + s1) for s0, s1 in chunk_bounds(length, k)]

    steps = 2 * (n - 1)
    plan, ops = [], []
    for t in range(steps):
        for a, b in segments((rank - t - 2) % n):
            buf = torch.empty(b - a, dtype=flat.dtype)
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    works = dist.batch_isend_irecv(ops) if ops else []
    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for (t, a, b, buf), w in zip(plan, works):
        w.wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        if t < n - 1:
            flat[a:b].add_(buf)
        else:
            flat[a:b].copy_(buf)
        if t + 1 < steps:
            sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for w in sending.values():
        w.wait()
    return tensor


# ---- ring_all_reduce -------------------------------------------------------------------

def _step(send, recv, nxt, prev):
    ops = [dist.P2POp(dist.irecv, recv, prev, group=None),
           dist.P2POp(dist.isend, send, nxt, group=None)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()


def ring_owner_plus_one(tensor):
    """R: the Horovod/Baidu schedule: at reduce-scatter step s rank r sends chunk (r - s)
    and adds chunk (r - s - 1), so it ends owning chunk r + 1; the all-gather follows."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    ch = [flat[a:b] for a, b in bounds]
    for s in range(n - 1):
        into = ch[(rank - s - 1) % n]
        buf = torch.empty_like(into)
        _step(ch[(rank - s) % n], buf, nxt, prev)
        into += buf
    for s in range(n - 1):
        _step(ch[(rank - s + 1) % n], ch[(rank - s) % n], nxt, prev)
    return tensor


def ring_torch_chunk(tensor):
    """R: chunks from torch.chunk (ceil-sized, possibly fewer than p: the missing ones
    empty), the schedule of the hint."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor
    parts = list(torch.chunk(flat, n)) if flat.numel() else []
    parts += [flat[flat.numel():]] * (n - len(parts))
    for s in range(n - 1):
        into = parts[(rank - s - 2) % n]
        buf = torch.empty_like(into)
        _step(parts[(rank - s - 1) % n], buf, nxt, prev)
        into.add_(buf)
    for s in range(n - 1):
        _step(parts[(rank - s) % n], parts[(rank - s - 1) % n], nxt, prev)
    return tensor


def ring_padded(tensor):
    """R?: Horovod-style padding: a zero-padded copy of numel ceil(N/p)*p, equal chunks
    of ceil(N/p), the ring on it, the result copied back."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    if n == 1 or flat.numel() == 0:
        return tensor
    c = -(-flat.numel() // n)
    work = torch.zeros(c * n, dtype=flat.dtype)
    work[:flat.numel()] = flat
    ch = work.view(n, c)
    for s in range(n - 1):
        buf = torch.empty(c, dtype=flat.dtype)
        _step(ch[(rank - s - 1) % n], buf, nxt, prev)
        ch[(rank - s - 2) % n] += buf
    for s in range(n - 1):
        _step(ch[(rank - s) % n], ch[(rank - s - 1) % n], nxt, prev)
    flat.copy_(work[:flat.numel()])
    return tensor


def _plain_ring(flat):
    rank, n, nxt, prev = _ring()
    bounds = chunk_bounds(flat.numel(), n)
    ch = [flat[a:b] for a, b in bounds]
    for s in range(n - 1):
        into = ch[(rank - s - 2) % n]
        buf = torch.empty_like(into)
        _step(ch[(rank - s - 1) % n], buf, nxt, prev)
        into += buf
    for s in range(n - 1):
        _step(ch[(rank - s) % n], ch[(rank - s - 1) % n], nxt, prev)


# ---- ring_reduce_scatter -------------------------------------------------------------

def rs_tagged_group_none(tensor):
    """R: receive posted first in the batch, explicit group=None and a tag per step, a
    fresh buffer from new_empty."""
    flat = _check(tensor)
    rank, n, nxt, prev = _ring()
    bounds = chunk_bounds(flat.numel(), n)
    if n == 1:
        return flat[bounds[0][0]:bounds[0][1]]
    for s in range(n - 1):
        sa, sb = bounds[(rank - s - 1) % n]
        ra, rb = bounds[(rank - s - 2) % n]
        buf = flat.new_empty(rb - ra)
        ops = [dist.P2POp(dist.irecv, buf, prev, None, 100 + s),
               dist.P2POp(dist.isend, flat[sa:sb], nxt, None, 100 + s)]
        reqs = dist.batch_isend_irecv(ops)
        for r in reqs:
            r.wait()
        torch.add(flat[ra:rb], buf, out=flat[ra:rb])
    a, b = bounds[rank]
    return flat[a:b]
