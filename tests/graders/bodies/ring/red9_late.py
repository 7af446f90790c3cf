"""Twelfth round, a late red team: lessons 05-07, 09, 10. Each body's docstring starts
with WRONG (...) or RIGHT: and says why in two lines.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_late.py.)
"""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below
from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce as _solution_ring


def _swap(send, nxt, recv, prev):
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, nxt),
                                        dist.P2POp(dist.irecv, recv, prev)]):
        work.wait()


# -- lesson 05 ------------------------------------------------------------------------------

def _ring_flat(flat, chunks, *, encode=None, decode=None):
    rank, n = dist.get_rank(), dist.get_world_size()
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for step in range(n - 1):
        out, into = chunks[(rank - step - 1) % n], chunks[(rank - step - 2) % n]
        wire = torch.empty(into.shape, dtype=into.dtype)
        send = out if out.is_contiguous() else out.contiguous()
        _swap(encode(send) if encode else send, nxt, wire, prev)
        into.add_(decode(wire) if decode else wire)
    for step in range(n - 1):
        out, into = chunks[(rank - step) % n], chunks[(rank - step - 1) % n]
        wire = torch.empty(into.shape, dtype=into.dtype)
        send = out if out.is_contiguous() else out.contiguous()
        _swap(encode(send) if encode else send, nxt, wire, prev)
        into.copy_(decode(wire) if decode else wire)


def ring_flipped_wire(tensor):
    """WRONG (what travels): the ring, every chunk sent REVERSED (torch.flip) and flipped back
    on arrival: the wire holds an encoding of the sums, which a constant probe cannot see."""
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    n = dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    _ring_flat(flat, chunks, encode=lambda t: t.flip(0), decode=lambda t: t.flip(0))
    return tensor


def ring_strided_chunks(tensor):
    """RIGHT: the ring with chunks cut as strided slices flat[c::n] (interleaved, NCCL-style
    element-wise ownership), sent through contiguous copies: same sizes, partners, sums."""
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    n = dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    chunks = [flat[c::n] for c in range(n)]
    _ring_flat(flat, chunks)
    return tensor


# -- lesson 06 ------------------------------------------------------------------------------

# -- lesson 09 ------------------------------------------------------------------------------

def rotate_waits_via_futures(k, v):
    """WRONG (waits inside): posts the one batch, then waits for it through the works'
    futures (torch.futures.wait_all), and hands back the finished works: nothing overlaps."""
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    torch.futures.wait_all([w.get_future() for w in works])
    return k_next, v_next, works


def pipelined_prefetch_once(tensor, segment_bytes=4 << 20):
    """WRONG (no pipeline): posts the first TWO receives together, then runs one segment at a
    time (wait, add, forward, only then post the next receive): two in flight once, never again."""
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (n - 1)
    plan = []
    for t in range(steps):
        start, stop = bounds[(rank - t - 2) % n]
        plan += [(t, a, min(a + seg, stop)) for a in range(start, stop, seg)]
    sending = {}
    posted = {}

    def post(i):
        if i < len(plan) and i not in posted:
            t, a, b = plan[i]
            buf = torch.empty(b - a, dtype=flat.dtype)
            posted[i] = (buf, dist.irecv(buf, prev))

    post(0)
    post(1)
    start, stop = bounds[(rank - 1) % n]
    for a in range(start, stop, seg):
        b = min(a + seg, stop)
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for i, (t, a, b) in enumerate(plan):
        post(i)
        buf, work = posted.pop(i)
        work.wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        if t < n - 1:
            flat[a:b].add_(buf)
        else:
            flat[a:b].copy_(buf)
        if t + 1 < steps:
            sending[(a, b)] = dist.isend(flat[a:b], nxt)
        post(i + 1)
    for work in sending.values():
        work.wait()
    return tensor


def ring_bare_assert(tensor):
    """RIGHT: the reference ring, refusing a non-contiguous tensor (outside the contract) with a
    bare `assert tensor.is_contiguous()`: an AssertionError with no message."""
    assert tensor.is_contiguous()
    n = dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    _ring_flat(flat, chunks)
    return tensor


_MEMO = {}


def ring_memo_large(tensor):
    """WRONG (state between calls): the ring, but for large tensors (>= 4096 elements, 'where
    it pays') a result cache keyed on this rank's own input bytes skips the ring on a repeat."""
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    n = dist.get_world_size()
    if n == 1:
        return tensor
    key = None
    if tensor.numel() >= 4096:
        key = (tensor.dtype, tuple(tensor.shape), tensor.view(-1).view(torch.uint8).sum().item(),
               bytes(tensor.view(-1)[:64].view(torch.uint8).numpy()))
        if key in _MEMO:
            tensor.copy_(_MEMO[key])
            return tensor
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    _ring_flat(flat, chunks)
    if key is not None:
        _MEMO[key] = tensor.clone()
    return tensor


_BUCKETS = {}


def ring_avg_kept_large_buffers(model):
    """WRONG (kept buffer): one flat buffer per dtype, ring-reduced, grads replaced by views of
    it; buffers of >= 1 MiB are KEPT per model between calls, as DDP keeps its buckets."""
    by_dtype = {}
    for p in _with_grads(model):
        by_dtype.setdefault(p.dtype, []).append(p)
    ws = dist.get_world_size()
    for dtype, params in by_dtype.items():
        numel = sum(p.numel() for p in params)
        if numel * params[0].element_size() >= 1 << 20:
            flat = _BUCKETS.get((id(model), dtype, numel))
            if flat is None:
                flat = _BUCKETS[(id(model), dtype, numel)] = torch.empty(numel, dtype=dtype)
        else:
            flat = torch.empty(numel, dtype=dtype)
        offset = 0
        for p in params:
            flat[offset:offset + p.numel()].copy_(p.grad.reshape(-1))
            offset += p.numel()
        if ws > 1:
            _solution_ring(flat)
        flat /= ws
        offset = 0
        for p in params:
            p.grad = flat[offset:offset + p.numel()].view(p.grad.shape)
            offset += p.numel()
    return None


# -- lesson 10 ------------------------------------------------------------------------------

def doubling_flipped_wire(tensor):
    """WRONG (what travels): recursive doubling (fold_in / fold_out as the hint), every core
    exchange sends the running sum REVERSED and flips it back on arrival: an encoding."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            rank, q = dist.get_rank(), power_of_two_below(p)
            mask = 1
            while mask < q:
                incoming = torch.empty_like(flat)
                _swap(flat.flip(0), rank ^ mask, incoming, rank ^ mask)
                flat.add_(incoming.flip(0))
                mask <<= 1
        fold_out(flat)
    return tensor


def ring_logs_to_file(tensor):
    """RIGHT: the ring, and a timing line appended to a per-rank log file (a learner's debug
    log): nothing of the data leaves through the file, only how long the call took."""
    import time
    start = time.perf_counter()
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    n = dist.get_world_size()
    if n > 1:
        flat = tensor.view(-1)
        _ring_flat(flat, [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)])
    with open(f"/tmp/red9_ring_rank{dist.get_rank()}.log", "a") as log:
        log.write(f"ring_all_reduce numel={tensor.numel()} {time.perf_counter() - start:.6f}s\n")
    return tensor


def pipelined_forward_from_scratch(tensor, segment_bytes=4 << 20):
    """RIGHT: the hint's pipeline (every receive posted first, one scratch row per step), but
    an all-gather segment is forwarded straight from its scratch row, then copied in."""
    if not tensor.is_contiguous():
        raise ValueError("needs a contiguous tensor")
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (n - 1)
    width = bounds[0][1] - bounds[0][0]
    scratch = torch.empty(steps, width, dtype=flat.dtype)
    plan, receives = [], []
    for t in range(steps):
        start, stop = bounds[(rank - t - 2) % n]
        for a in range(start, stop, seg):
            b = min(a + seg, stop)
            buf = scratch[t, a - start:b - start]
            plan.append((t, a, b, buf))
            receives.append(dist.irecv(buf, prev))
    sending, extra = {}, []
    start, stop = bounds[(rank - 1) % n]
    for a in range(start, stop, seg):
        b = min(a + seg, stop)
        sending[(a, b)] = dist.isend(flat[a:b], nxt)
    for (t, a, b, buf), work in zip(plan, receives):
        work.wait()
        if t < n - 1:
            if (a, b) in sending:
                sending.pop((a, b)).wait()
            flat[a:b].add_(buf)
            if t + 1 < steps:
                sending[(a, b)] = dist.isend(flat[a:b], nxt)
        else:
            if t + 1 < steps:
                extra.append(dist.isend(buf, nxt))      # forward what arrived, as it is
            if (a, b) in sending:
                sending.pop((a, b)).wait()
            flat[a:b].copy_(buf)
    for work in list(sending.values()) + extra:
        work.wait()
    return tensor


# -- lesson 06, state ------------------------------------------------------------------------

from labs.gradients import plan_buckets  # noqa: E402
from tests.graders.bodies._shared import with_grads as _with_grads  # noqa: E402

_PLANS = {}


def bucketed_plan_cached_per_model(model, bucket_bytes):
    """WRONG (state between calls): the bucket plan computed once per model (as DDP's reducer
    does at construction) and reused: a later step where other grads are None gets a stale plan."""
    key = (id(model), bucket_bytes)
    if key not in _PLANS:
        _PLANS[key] = (model, plan_buckets(_with_grads(model), bucket_bytes))
    ws = dist.get_world_size()
    for bucket in _PLANS[key][1]:
        grads = [p.grad for p in bucket]
        flat = torch.cat([g.reshape(-1) for g in grads])
        if ws > 1:
            _solution_ring(flat)
        flat /= ws
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.view_as(g))
    return None
