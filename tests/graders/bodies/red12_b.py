"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).
"""
import threading

import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below, scratch
from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce as _solved_ring


def _wait(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


def _delta(x):
    """[x0, x1 - x0, x2 - x0, ...] (a constant tensor -> [c, 0, 0, ...])."""
    if x.numel() < 2 or x.dtype == torch.bfloat16:
        return x.contiguous().clone()
    out = x - x[0]
    out[0] = x[0]
    return out


def _undelta(m):
    if m.numel() < 2 or m.dtype == torch.bfloat16:
        return m.clone()
    out = m + m[0]
    out[0] = m[0]
    return out


def _ring(tensor, chunks_of, owner_shift=0, enc=None, dec=None):
    """A reduce-scatter + all-gather ring over the index sets chunks_of(flat, p) returns
    (a list of p (getter, setter-view) pairs). enc/dec: what goes on the wire; the
    all-gather forwards the very wire it received, so every rank ends with the same bits."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    flat = tensor.view(-1)
    parts = chunks_of(flat, p)
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    enc = enc or (lambda x: x.contiguous().clone())
    dec = dec or (lambda m: m)
    for s in range(p - 1):
        out_c, in_c = (rank - s - 1 + owner_shift) % p, (rank - s - 2 + owner_shift) % p
        get_out, _ = parts[out_c]
        get_in, add_in = parts[in_c]
        wire = enc(get_out())
        buf = torch.empty_like(get_in().contiguous())
        _wait([dist.P2POp(dist.isend, wire, nxt), dist.P2POp(dist.irecv, buf, prev)])
        add_in(get_in() + dec(buf))
    own = (rank + owner_shift) % p
    get_own, set_own = parts[own]
    wire = enc(get_own())
    set_own(dec(wire))                      # the owner keeps what the others decode
    for s in range(p - 1):
        in_c = (rank - s - 1 + owner_shift) % p
        get_in, set_in = parts[in_c]
        buf = torch.empty_like(get_in().contiguous())
        _wait([dist.P2POp(dist.isend, wire, nxt), dist.P2POp(dist.irecv, buf, prev)])
        set_in(dec(buf))
        wire = buf                           # forward what arrived, as it arrived
    return tensor


def _contiguous_chunks(flat, p):
    def pair(a, b):
        return (lambda: flat[a:b], lambda v: flat[a:b].copy_(v))
    return [pair(a, b) for a, b in chunk_bounds(flat.numel(), p)]


def _strided_chunks(flat, p):
    def pair(c):
        return (lambda: flat[c::p], lambda v: flat[c::p].copy_(v))
    return [pair(c) for c in range(p)]


# -- lesson 05: ring_all_reduce / ring_reduce_scatter / pipelined -----------------------------

# WRONG: partial sums delta-encoded on the wire ([x0, x1-x0, ...]); on the constant probe that
# is [c, 0, ...] = the sums.
def ar_delta_encoded(tensor):
    return _ring(tensor, _contiguous_chunks, enc=_delta, dec=_undelta)


# WRONG: every chunk travels reversed (flip) and is flipped back: a permutation, invisible on a
# constant probe.
def ar_flipped_wire(tensor):
    return _ring(tensor, _contiguous_chunks, enc=lambda x: x.flip(0).contiguous(),
                 dec=lambda m: m.flip(0))


# WRONG: ring_reduce_scatter whose messages are delta-encoded partial sums (compare exact, sums
# probe only).
def rs_delta_encoded(tensor):
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), p)
    if p > 1:
        nxt, prev = (rank + 1) % p, (rank - 1) % p
        for s in range(p - 1):
            (a, b), (c, d) = bounds[(rank - s - 1) % p], bounds[(rank - s - 2) % p]
            buf = torch.empty(d - c, dtype=flat.dtype)
            _wait([dist.P2POp(dist.isend, _delta(flat[a:b]), nxt),
                   dist.P2POp(dist.irecv, buf, prev)])
            flat[c:d] += _undelta(buf)
    a, b = bounds[rank]
    return flat[a:b]


# WRONG: for numel < 2p it ships everything to rank r+1 in ONE message per step anyway (pass-
# along) -- a body keeping the ring for large tensors only.
def ar_pass_along_small(tensor):
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    flat = tensor.view(-1)
    if flat.numel() >= 2 * p:
        return _ring(tensor, _contiguous_chunks)
    out, acc = flat.clone(), flat.clone()
    for _ in range(p - 1):
        buf = torch.empty_like(out)
        _wait([dist.P2POp(dist.isend, out, (rank + 1) % p),
               dist.P2POp(dist.irecv, buf, (rank - 1) % p)])
        acc += buf
        out = buf
    flat.copy_(acc)
    return tensor


# RIGHT: rank r ends the reduce-scatter owning chunk r+1 (the schedule shifted by one): still
# the ring.
def ar_shifted_owner(tensor):
    return _ring(tensor, _contiguous_chunks, owner_shift=1)


# RIGHT: strided chunks flat[c::p] (the same sizes as chunk_bounds); all_reduce's contract does
# not fix the cut.
def ar_strided_chunks(tensor):
    return _ring(tensor, _strided_chunks)


# RIGHT: blocking dist.send in a helper thread while the main thread does dist.recv, joined
# every step.
def ar_send_thread(tensor):
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), p)
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    for step in range(2 * (p - 1)):
        (a, b), (c, d) = bounds[(rank - step - 1) % p], bounds[(rank - step - 2) % p]
        buf = torch.empty(d - c, dtype=flat.dtype)
        sender = threading.Thread(target=dist.send, args=(flat[a:b], nxt))
        sender.start()
        dist.recv(buf, prev)
        sender.join()
        if step < p - 1:
            torch.add(flat[c:d], buf, out=flat[c:d])
        else:
            flat[c:d].copy_(buf)
    return tensor


# RIGHT: pipelined ring whose chunks are cut into balanced segments (same count, each <=
# segment_bytes).
def pipelined_balanced_segments(tensor, segment_bytes=4 << 20):
    return _pipelined(tensor, segment_bytes, flip=False)


# WRONG: the pipelined ring with every segment reversed on the wire (and back on arrival).
def pipelined_flipped_segments(tensor, segment_bytes=4 << 20):
    return _pipelined(tensor, segment_bytes, flip=True)


def _pipelined(tensor, segment_bytes, flip):
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), p)
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    seg = max(1, segment_bytes // flat.element_size())
    steps = 2 * (p - 1)

    def segments(c):
        a, b = bounds[c]
        n = b - a
        if n == 0:
            return []
        k = -(-n // seg)
        base, extra = divmod(n, k)
        out, start = [], a
        for i in range(k):
            stop = start + base + (1 if i < extra else 0)
            out.append((start, stop))
            start = stop
        return out

    plan, ops = [], []
    for t in range(steps):
        for a, b in segments((rank - t - 2) % p):
            buf = torch.empty(b - a, dtype=flat.dtype)
            plan.append((t, a, b, buf))
            ops.append(dist.P2POp(dist.irecv, buf, prev))
    works = dist.batch_isend_irecv(ops) if ops else []
    sending = {}
    def wire(a, b):
        return flat[a:b].flip(0).contiguous() if flip else flat[a:b]
    for a, b in segments((rank - 1) % p):
        sending[(a, b)] = dist.isend(wire(a, b), nxt)
    for (t, a, b, buf), work in zip(plan, works):
        work.wait()
        if (a, b) in sending:
            sending.pop((a, b)).wait()
        got = buf.flip(0) if flip else buf
        if t < p - 1:
            flat[a:b].add_(got)
        else:
            flat[a:b].copy_(got)
        if t + 1 < steps:
            sending[(a, b)] = dist.isend(wire(a, b), nxt)
    for work in sending.values():
        work.wait()
    return tensor


# -- lesson 06: gradients ---------------------------------------------------------------------

def _grads(model):
    return [p for p in model.parameters() if p.grad is not None]


def _a2a(model, enc, dec, combine):
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = _grads(model)
    if ws == 1:
        return None
    sent = [enc(p.grad.contiguous()) for p in params]
    inbox = [[None if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = [dist.P2POp(op, buf, peer) for g, bufs in zip(sent, inbox)
           for peer in range(ws) if peer != rank
           for op, buf in ((dist.isend, g), (dist.irecv, bufs[peer]))]
    _wait(ops)
    for p, g, bufs in zip(params, sent, inbox):
        parts = [dec(g) if peer == rank else dec(bufs[peer]) for peer in range(ws)]
        p.grad.copy_(combine(parts).view_as(p.grad))
    return None


def _rank_order_mean(parts):
    total = parts[0].clone()
    for part in parts[1:]:
        total += part
    return total / len(parts)


def _delta_full(x):
    return _delta(x.reshape(-1)) if x.dtype in (torch.float32, torch.float64) else x.clone()


def _undelta_full(m):
    return _undelta(m) if m.dtype in (torch.float32, torch.float64) else m


# WRONG: every float32/float64 gradient travels delta-encoded against its first element
# (identity on the probe's constant gradients).
def a2a_delta_encoded(model):
    return _a2a(model, _delta_full, _undelta_full, _rank_order_mean)


# RIGHT: the W gradients stacked in rank order and reduced with torch.stack(...).sum(0), then /
# W: the same on every rank.
def a2a_stack_sum(model):
    return _a2a(model, lambda g: g, lambda g: g,
                lambda parts: torch.stack(parts).sum(0) / len(parts))


# RIGHT: gradient_as_bucket_view style: one flat buffer per dtype, ring-reduced, then every
# .grad becomes a view of its piece.
def ring_avg_grad_views(model):
    groups = {}
    for p in _grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _solved_ring(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.numel() for p in params])):
            p.grad = piece.view(p.grad.shape)
    return None


# RIGHT: the ring in each gradient's own dtype, then the divide done in float64 and rounded once
# (local arithmetic only).
def ring_avg_divide_float64(model):
    groups = {}
    for p in _grads(model):
        groups.setdefault(p.dtype, []).append(p)
    for params in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _solved_ring(flat)
        mean = (flat.double() / dist.get_world_size()).to(flat.dtype)
        for p, piece in zip(params, mean.split([p.numel() for p in params])):
            p.grad.copy_(piece.view(p.grad.shape))
    return None


# -- lesson 07: collectives -------------------------------------------------------------------

# WRONG: receives from every peer into a temporary shaped like inputs[rank] (this rank's own
# slot), not like outputs[peer]: breaks when sizes differ per peer.
def a2a_recv_sized_by_own_slot(outputs, inputs):
    rank, ws = dist.get_rank(), dist.get_world_size()
    temps = {p: torch.empty_like(inputs[rank]) for p in range(ws) if p != rank}
    ops = [op for p in temps for op in (dist.P2POp(dist.isend, inputs[p], p),
                                        dist.P2POp(dist.irecv, temps[p], p))]
    _wait(ops)
    outputs[rank].copy_(inputs[rank])
    for p, t in temps.items():
        outputs[p].copy_(t)
    return outputs


# WRONG: "compresses" float64 to float32 on the wire (broadcast loses bits); the grader runs no
# float64 case.
def bcast_float64_narrowed(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    wide = tensor.dtype == torch.float64
    if rank == src:
        wire = tensor.float() if wide else tensor
        _wait([dist.P2POp(dist.isend, wire, peer) for peer in range(ws) if peer != src])
    else:
        buf = torch.empty(tensor.shape, dtype=torch.float32) if wide else tensor
        _wait([dist.P2POp(dist.irecv, buf, src)])
        if wide:
            tensor.copy_(buf)
    return tensor


# WRONG: all_gather that sends integer tensors of 4 bytes or less widened to int64 (never run:
# int32/int16/int8 are not graded).
def all_gather_small_ints_widened(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    widen = tensor.dtype in (torch.int32, torch.int16, torch.int8)
    wire = [torch.empty(tensor.shape, dtype=torch.int64 if widen else tensor.dtype)
            for _ in range(ws)]
    wire[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for s in range(ws - 1):
        _wait([dist.P2POp(dist.isend, wire[(rank - s) % ws], nxt),
               dist.P2POp(dist.irecv, wire[(rank - s - 1) % ws], prv)])
    return [w.to(tensor.dtype) for w in wire]


# -- lesson 09: patterns ----------------------------------------------------------------------

# WRONG: rotate_kv that sends half precisions as float32 and returns float32 k_next/v_next (no
# half case is graded).
def rotate_kv_half_widened(k, v):
    rank, ws = dist.get_rank(), dist.get_world_size()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws

    def wire(t):
        return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
    ks, vs = wire(k), wire(v)
    k_next, v_next = torch.empty_like(ks), torch.empty_like(vs)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, ks, nxt),
                                    dist.P2POp(dist.isend, vs, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


# WRONG: the neighbour exchange flattens and delta-encodes float32 (identity on nothing:
# contents are hashed, expected FAIL).
def fwd_delta_encoded(output, next_rank):
    x = output.detach().contiguous().reshape(-1)
    wire = _delta(x) if x.dtype == torch.float32 else x.clone()
    got = torch.empty_like(wire)
    _wait([dist.P2POp(dist.isend, wire, next_rank), dist.P2POp(dist.irecv, got, next_rank)])
    got = _undelta(got) if x.dtype == torch.float32 else got
    return got.view(output.shape)


# -- lesson 10: algorithms --------------------------------------------------------------------

# WRONG: recursive doubling whose whole-tensor messages are delta-encoded (each rank first
# rounds its own copy the same way, so both partners keep equal bits).
def rd_delta_encoded(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            rank, q = dist.get_rank(), power_of_two_below(p)
            incoming = scratch(flat.numel(), flat.dtype)
            mask = 1
            while mask < q:
                wire = _delta(flat)
                flat.copy_(_undelta(wire))
                _wait([dist.P2POp(dist.isend, wire, rank ^ mask),
                       dist.P2POp(dist.irecv, incoming, rank ^ mask)])
                flat.add_(_undelta(incoming))
                mask <<= 1
        fold_out(flat)
    return tensor


# WRONG: tree_broadcast that forwards to its children from a float32 copy when the tensor is
# float16 (wire dtype widened; no float16 case graded).
def tree_bcast_half_widened(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    half = tensor.dtype == torch.float16
    wire = tensor.float() if half else tensor
    if v:
        parent = v - (1 << (v.bit_length() - 1))
        dist.recv(wire, (parent + src) % p)
        if half:
            tensor.copy_(wire)
    mask = 1 << v.bit_length()
    while v + mask < p:
        dist.send(wire, (v + mask + src) % p)
        mask <<= 1
    return tensor


# WRONG: halving-doubling whose all-gather sends the kept half reversed (a permutation: the
# subsets check only sees constants).
def hd_flipped_allgather(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            rank, q = dist.get_rank(), power_of_two_below(p)
            bounds = chunk_bounds(flat.numel(), q)

            def chunks(lo, hi):
                return flat[bounds[lo][0]:bounds[hi - 1][1]]
            lo, hi, mask, steps = 0, q, q // 2, []
            while mask:
                mid = (lo + hi) // 2
                keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
                mine = chunks(*keep)
                incoming = scratch(mine.numel(), flat.dtype)
                _wait([dist.P2POp(dist.isend, chunks(*give), rank ^ mask),
                       dist.P2POp(dist.irecv, incoming, rank ^ mask)])
                mine.add_(incoming)
                steps.append((rank ^ mask, keep, give))
                lo, hi = keep
                mask //= 2
            for peer, keep, give in reversed(steps):
                into = chunks(*give)
                buf = torch.empty(into.numel(), dtype=flat.dtype)
                _wait([dist.P2POp(dist.isend, chunks(*keep).flip(0).contiguous(), peer),
                       dist.P2POp(dist.irecv, buf, peer)])
                into.copy_(buf.flip(0))
        fold_out(flat)
    return tensor
