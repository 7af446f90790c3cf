"""Round 15 (ours), part 3: lesson 05's ring: segments counted in float32 elements whatever
the dtype, a pipeline that forwards a chunk at a time, a copy returned for the view; and a
reduce-scatter receiving straight into its chunk (right)."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


def _wait(works):
    for w in works:
        w.wait()


# WRONG: segments counted as float32 elements whatever the dtype (segment_bytes // 4).
def pipelined_segment_as_float32(tensor, segment_bytes=4 << 20):
    flat = tensor.view(-1)
    return _pipelined(tensor, flat, max(1, segment_bytes // 4))


def _pipelined(tensor, flat, seg):
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    steps = 2 * (n - 1)
    width = bounds[0][1] - bounds[0][0]
    scratch = torch.empty((steps, width), dtype=flat.dtype)

    def segments(c):
        start, stop = bounds[c]
        return [(a, min(a + seg, stop)) for a in range(start, stop, seg)]

    plan, ops = [], []
    for t in range(steps):
        c = (rank - t - 2) % n
        start = bounds[c][0]
        for a, b in segments(c):
            buf = scratch[t, a - start:b - start]
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    receives = dist.batch_isend_irecv(ops) if ops else []
    sending = {}
    for a, b in segments((rank - 1) % n):
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for (t, a, b, buf), work in zip(plan, receives):
        work.wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        flat[a:b].add_(buf) if t < n - 1 else flat[a:b].copy_(buf)
        if t + 1 < steps:
            sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for work in sending.values():
        work.wait()
    return tensor


# WRONG: pipelined, but each step's segments all received before any is forwarded (a
# chunk at a time: the same messages, no overlap across segments).
def pipelined_chunk_at_a_time(tensor, segment_bytes=4 << 20):
    flat = tensor.view(-1)
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    for t in range(2 * (n - 1)):
        send_c, recv_c = (rank - t - 1) % n, (rank - t - 2) % n
        sends = [(a, min(a + seg, bounds[send_c][1])) for a in range(*bounds[send_c], seg)]
        recvs = [(a, min(a + seg, bounds[recv_c][1])) for a in range(*bounds[recv_c], seg)]
        bufs = [torch.empty(b - a, dtype=flat.dtype) for a, b in recvs]
        ops = [dist.P2POp(dist.isend, flat[a:b].clone(), nxt) for a, b in sends] + \
              [dist.P2POp(dist.irecv, buf, prev) for buf in bufs]
        if ops:
            _wait(dist.batch_isend_irecv(ops))
        for (a, b), buf in zip(recvs, bufs):
            flat[a:b].add_(buf) if t < n - 1 else flat[a:b].copy_(buf)
    return tensor


# RIGHT: reduce-scatter receiving straight into the chunk, its own part saved first.
def rs_receive_into_chunk(tensor):
    flat = tensor.view(-1)
    rank, n = dist.get_rank(), dist.get_world_size()
    bounds = chunk_bounds(flat.numel(), n)
    for s in range(n - 1):
        send_c, recv_c = (rank - s - 1) % n, (rank - s - 2) % n
        mine = flat[bounds[recv_c][0]:bounds[recv_c][1]].clone()
        _wait(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, flat[bounds[send_c][0]:bounds[send_c][1]], (rank + 1) % n),
            dist.P2POp(dist.irecv, flat[bounds[recv_c][0]:bounds[recv_c][1]], (rank - 1) % n)]))
        flat[bounds[recv_c][0]:bounds[recv_c][1]].add_(mine)
    return flat[bounds[rank][0]:bounds[rank][1]]


# WRONG: returns a copy of the owned chunk, not the view the contract asks for.
def rs_returns_copy(tensor):
    flat = tensor.view(-1)
    rank, n = dist.get_rank(), dist.get_world_size()
    bounds = chunk_bounds(flat.numel(), n)
    for s in range(n - 1):
        send_c, recv_c = (rank - s - 1) % n, (rank - s - 2) % n
        buf = torch.empty(bounds[recv_c][1] - bounds[recv_c][0], dtype=flat.dtype)
        _wait(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, flat[bounds[send_c][0]:bounds[send_c][1]], (rank + 1) % n),
            dist.P2POp(dist.irecv, buf, (rank - 1) % n)]))
        flat[bounds[recv_c][0]:bounds[recv_c][1]].add_(buf)
    return flat[bounds[rank][0]:bounds[rank][1]].clone()
