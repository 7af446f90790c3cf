"""Reference solutions for lesson 05 (labs/ring.py)."""
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


def pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):
    flat = _check(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (n - 1)              # steps 0..n-2 reduce, n-1..2n-3 gather
    width = bounds[0][1] - bounds[0][0]
    scratch = _scratch((steps, width), flat.dtype)   # one receive row per step

    def segments(c):
        start, stop = bounds[c]
        return [(a, min(a + seg, stop)) for a in range(start, stop, seg)]

    # 1. Post every receive now, in the order the sends will come, each into its own
    #    scratch row: nothing we write later is a buffer still in flight.
    plan, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        start = bounds[c][0]
        for a, b in segments(c):
            buf = scratch[t, a - start:b - start]
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    receives = dist.batch_isend_irecv(ops) if ops else []
    sending = {}                     # segment -> the isend still reading it

    def send(a, b):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)

    # 2. Step 0 sends our own chunk r-1 as it is.
    for a, b in segments((rank - 1) % n):
        send(a, b)
    # 3. Each segment, as soon as it arrives: add it (reduce steps) or copy it (gather
    #    steps) into the tensor, once the send reading that segment is done; forward it.
    for (t, a, b, buf), work in zip(plan, receives):
        work.wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        with span("add" if t < n - 1 else "copy"):
            flat[a:b].add_(buf) if t < n - 1 else flat[a:b].copy_(buf)
        if t + 1 < steps:
            send(a, b)
    for work in sending.values():
        work.wait()
    return tensor
