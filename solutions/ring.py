"""Reference solutions for lesson 05 (labs/ring.py)."""
from dataclasses import dataclass

import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from labs.harness.ranks.tracing import span


def _check(tensor):
    if not tensor.is_contiguous():
        raise ValueError("the ring needs a contiguous tensor (gloo sends contiguous memory); "
                         "pass tensor.contiguous() and copy the result back")
    return tensor.view(-1)


_SCRATCH = {}


def _scratch(shape, dtype):
    """A scratch tensor kept between calls. A fresh one every call costs a page fault per
    4 KiB the first time it is written (large allocations come straight from mmap and go
    back on free): on this course's machine that made a 64 MiB ring twice as slow."""
    numel = 1
    for size in shape:
        numel *= size
    buf = _SCRATCH.get(dtype)
    if buf is None or buf.numel() < numel:
        buf = _SCRATCH[dtype] = torch.empty(numel, dtype=dtype)
    return buf[:numel].view(shape)


def ring_reduce_scatter(tensor):
    flat = _check(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    bounds = chunk_bounds(flat.numel(), n)

    def chunk(c):
        start, stop = bounds[c]
        return flat[start:stop]

    if n == 1:
        return chunk(0)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    # Chunk sizes differ by at most one element: one scratch buffer fits them all.
    scratch = _scratch((bounds[0][1] - bounds[0][0],), flat.dtype)
    for step in range(n - 1):
        outgoing = chunk((rank - step - 1) % n)
        target = chunk((rank - step - 2) % n)
        incoming = scratch[:target.numel()]
        ops = [dist.P2POp(dist.isend, outgoing, nxt), dist.P2POp(dist.irecv, incoming, prev)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        with span("add"):
            target.add_(incoming)      # accumulates in the tensor's dtype, as gloo does
    return chunk(rank)


def ring_all_reduce(tensor):
    flat = _check(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    ring_reduce_scatter(tensor)        # rank r now holds the sum of chunk r
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for step in range(n - 1):
        s0, s1 = bounds[(rank - step) % n]
        r0, r1 = bounds[(rank - step - 1) % n]
        ops = [dist.P2POp(dist.isend, flat[s0:s1], nxt),
               dist.P2POp(dist.irecv, flat[r0:r1], prev)]   # final values: no add
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    return tensor


@dataclass
class _Arrival:
    """One segment's receive: at ring step `step`, elements [start, stop) of the tensor
    arrive in `buf`, its place in that step's scratch row."""
    step: int
    start: int
    stop: int
    buf: torch.Tensor


def _segments(bounds, c, seg):
    """Chunk c cut into (start, stop) pieces of at most `seg` elements."""
    start, stop = bounds[c]
    return [(a, min(a + seg, stop)) for a in range(start, stop, seg)]


def _post_receives(flat, bounds, seg, prev) -> tuple[list[_Arrival], list]:
    """Every receive of the ring posted now, in the order the sends will come, each into its
    own scratch row: nothing we write later is a buffer still in flight. (arrivals, Works)"""
    rank, n = dist.get_rank(), dist.get_world_size()
    steps = 2 * (n - 1)              # steps 0..n-2 reduce, n-1..2n-3 gather
    scratch = _scratch((steps, bounds[0][1] - bounds[0][0]), flat.dtype)  # a row per step
    arrivals, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        for a, b in _segments(bounds, c, seg):
            arrivals.append(_Arrival(t, a, b, scratch[t, a - bounds[c][0]:b - bounds[c][0]]))
            ops.append(dist.P2POp(dist.irecv, arrivals[-1].buf, prev))
    return arrivals, dist.batch_isend_irecv(ops) if ops else []


def pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):
    flat = _check(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    # 1. Post every receive now (see _post_receives).
    arrivals, receives = _post_receives(flat, bounds, seg, prev)
    sending = {}                     # segment -> the isend still reading it

    def send(a, b):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)

    # 2. Step 0 sends our own chunk r-1 as it is.
    for a, b in _segments(bounds, (rank - 1) % n, seg):
        send(a, b)
    # 3. Each segment, as soon as it arrives: add it (reduce steps) or copy it (gather
    #    steps) into the tensor, once the send reading that segment is done; forward it.
    for got, work in zip(arrivals, receives):
        work.wait()
        if (got.start, got.stop) in sending:
            sending.pop((got.start, got.stop)).wait()
        into, reducing = flat[got.start:got.stop], got.step < n - 1
        with span("add" if reducing else "copy"):
            into.add_(got.buf) if reducing else into.copy_(got.buf)
        if got.step + 1 < 2 * (n - 1):
            send(got.start, got.stop)
    for work in sending.values():
        work.wait()
    return tensor
