"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_b.py.)
"""
import threading

import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies._shared import delta as _delta, undelta as _undelta


def _wait(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


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


# WRONG: the neighbour exchange flattens and delta-encodes float32 (identity on nothing:
# contents are hashed, expected FAIL).
def fwd_delta_encoded(output, next_rank):
    x = output.detach().contiguous().reshape(-1)
    wire = _delta(x) if x.dtype == torch.float32 else x.clone()
    got = torch.empty_like(wire)
    _wait([dist.P2POp(dist.isend, wire, next_rank), dist.P2POp(dist.irecv, got, next_rank)])
    got = _undelta(got) if x.dtype == torch.float32 else got
    return got.view(output.shape)
