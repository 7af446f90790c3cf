"""Seventh round, ours: what travels in a reduction (the partial sums, on the probe of
labs.harness.grading.sums), wrong and right bodies that no red team wrote."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce


def _swap(send, peer, recv, source=None):
    """Send to `peer` and receive from `source` (default: the same peer), one batch."""
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer),
                                        dist.P2POp(dist.irecv, recv, peer if source is None
                                                   else source)]):
        work.wait()


def _ring(tensor, *, owner_shift=0, encode=None, decode=None, gather=True, accumulate=None):
    """The ring all-reduce (or its reduce-scatter alone): rank r ends its reduce-scatter with
    chunk (r + owner_shift) % n. encode/decode: what goes on the wire and back."""
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    chunks = [flat[a:b] for a, b in bounds]
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    mine = (rank + owner_shift) % n
    if n == 1:
        return chunks[mine] if not gather else tensor
    for step in range(n - 1):
        out, into = chunks[(mine - step - 1) % n], chunks[(mine - step - 2) % n]
        wire = torch.empty_like(into)
        _swap(encode(out) if encode else out, nxt, wire, prev)
        got = decode(wire) if decode else wire
        if accumulate:
            into.copy_((into.to(accumulate) + got.to(accumulate)).to(into.dtype))
        else:
            into.add_(got)
    if not gather:
        return chunks[mine]
    for step in range(n - 1):
        out, into = chunks[(mine - step) % n], chunks[(mine - step - 1) % n]
        wire = torch.empty_like(into)
        _swap(encode(out) if encode else out, nxt, wire, prev)
        into.copy_(decode(wire) if decode else wire)
    return tensor


def _half(wire):
    return wire * 0.5 if wire.is_floating_point() else wire.div(2, rounding_mode="trunc")


def rs_negated_wire(tensor):
    """WRONG (what travels): the reduce-scatter, every message negated and negated back on
    arrival: a - (-b) is a + b bit for bit, the sizes and partners are the reference's, the
    wire holds -sums."""
    return _ring(tensor, encode=torch.neg, decode=torch.neg, gather=False)


def ring_doubled_wire(tensor):
    """WRONG (what travels): every message doubled and halved on arrival (exact in binary
    floating point and for these integers): the values are right, the wire is not the sums."""
    return _ring(tensor, encode=lambda c: c * 2, decode=_half)


def pipelined_doubled_wire(tensor, segment_bytes=4 << 20):
    """WRONG (what travels): the pipelined ring's messages doubled (one segment = one chunk
    here, which the method allows when a chunk fits a segment: not the case graded at
    small segments, which fails on its counts; the doubled wire fails at every size)."""
    return _ring(tensor, encode=lambda c: c * 2, decode=_half)


def _fold_in(flat, q):
    """Ranks q.. send their tensor to rank - q and wait for the result; True for the core."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank >= q:
        dist.send(flat, rank - q)
        return False
    if rank + q < p:
        extra = torch.empty_like(flat)
        dist.recv(extra, rank + q)
        flat.add_(extra)
    return True


def _fold_out(flat, q):
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank >= q:
        dist.recv(flat, rank - q)
    elif rank + q < p:
        dist.send(flat, rank + q)


def _halving(tensor, cut, encode=None, decode=None):
    """Halving-doubling with chunk bounds from `cut(numel, q)`."""
    flat, p = tensor.view(-1), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if _fold_in(flat, q):
        rank, bounds = dist.get_rank(), cut(flat.numel(), q)
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            mine = flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]]
            out = flat[bounds[give[0]][0]:bounds[give[1] - 1][1]]
            wire = torch.empty_like(mine)
            _swap(encode(out) if encode else out, rank ^ mask, wire)
            mine.add_(decode(wire) if decode else wire)
            steps.append((rank ^ mask, keep, give))
            lo, hi = keep
            mask //= 2
        for peer, keep, give in reversed(steps):
            _swap(flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]], peer,
                  flat[bounds[give[0]][0]:bounds[give[1] - 1][1]])
    _fold_out(flat, q)
    return tensor


def _bounds_larger_last(numel, parts):
    """Chunk sizes differing by one, the larger ones last (the reference: first)."""
    size, extra = divmod(numel, parts)
    sizes = [size + (i >= parts - extra) for i in range(parts)]
    starts = [sum(sizes[:i]) for i in range(parts)]
    return [(a, a + n) for a, n in zip(starts, sizes)]


def halving_scaled_wire(tensor):
    """WRONG (what travels): halving-doubling whose reduce-scatter messages are doubled and
    halved on arrival."""
    return _halving(tensor, chunk_bounds, encode=lambda c: c * 2, decode=_half)


def halving_larger_chunks_last(tensor):
    """RIGHT: halving-doubling cutting the tensor another way (the larger chunks last): the
    method leaves the cut free, the sums are the same."""
    return _halving(tensor, _bounds_larger_last)


def ring_other_owner(tensor):
    """RIGHT: the ring where rank r ends its reduce-scatter with chunk r + 1 (the reference:
    chunk r). Each step still sends the running sum of the ranks before it."""
    return _ring(tensor, owner_shift=1)


def ring_accumulates_in_float64(tensor):
    """RIGHT: the ring adding in float64 (rounded back to the tensor's dtype): what travels
    is still the partial sums, in the tensor's own dtype."""
    return _ring(tensor, accumulate=torch.float64 if tensor.is_floating_point() else None)


def _tree(tensor, src, encode=None, decode=None):
    """The binomial broadcast tree, each message through encode/decode."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    wire = torch.empty_like(tensor) if v else tensor
    if v:
        dist.recv(wire, (v - (1 << (v.bit_length() - 1)) + src) % p)
        tensor.copy_(decode(wire) if decode else wire)
    out = encode(tensor) if encode else tensor
    mask = 1 << v.bit_length()
    while v + mask < p:
        dist.send(out, (v + mask + src) % p)
        mask <<= 1
    return tensor


def _flip(t):
    """Every bit inverted (its own inverse), in any dtype."""
    as_bytes = t.contiguous().view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)
    return (~as_bytes).view(t.dtype).reshape(t.shape)


def tree_bits_flipped(tensor, src):
    """WRONG (what travels): the tree, every message with its bits inverted and inverted back
    on arrival: the values and the routes are right, the messages are not the data."""
    return _tree(tensor, src, encode=_flip, decode=_flip)


def a2a_negated_wire(model):
    """WRONG (what travels): every gradient to every other rank, negated on the wire and
    negated back on arrival; the average is right."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    sent = [-p.grad.contiguous() for p in params]
    received = [[torch.empty_like(g) for _ in range(n)] for g in sent]
    ops = [op for g, bufs in zip(sent, received) for peer in range(n) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    for p, bufs in zip(params, received):
        total = p.grad.clone()
        for peer in range(n):
            if peer != rank:
                total -= bufs[peer].view_as(total)
        p.grad.copy_(total / n)
    return None


def ring_avg_doubled_wire(model):
    """WRONG (what travels): one ring per dtype over the flat gradients, every message
    doubled and halved on arrival."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        _ring(flat, encode=lambda c: c * 2, decode=_half)     # (not lesson 05's ring: fails)
        flat /= dist.get_world_size()
        for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
            p.grad.copy_(piece.view_as(p.grad))
    return None


def ring_avg_predivided(model):
    """RIGHT: one ring per dtype over the flat gradients, each divided by the world size
    before the ring adds them (the sums on the wire are the means' partial sums)."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p)
    for params in by_dtype.values():
        flat = torch.cat([p.grad.reshape(-1) for p in params]) / dist.get_world_size()
        ring_all_reduce(flat)
        for p, piece in zip(params, flat.split([p.grad.numel() for p in params])):
            p.grad.copy_(piece.view_as(p.grad))
    return None


def doubling_combined_sent_back(tensor):
    """WRONG (what travels): recursive doubling where, in each round, the lower rank of a pair
    sends its running sum, and the upper one adds it and sends back the combined sum. Same
    partners, one message each way of the same size per round, the same values at the end;
    but the upper rank sends the lower one its own data back, which the method never does."""
    flat, p = tensor.view(-1), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if _fold_in(flat, q):
        rank, mask = dist.get_rank(), 1
        while mask < q:
            peer = rank ^ mask
            if rank & mask:
                incoming = torch.empty_like(flat)
                dist.recv(incoming, peer)
                flat.add_(incoming)
                dist.send(flat, peer)
            else:
                dist.send(flat, peer)
                dist.recv(flat, peer)
            mask <<= 1
    _fold_out(flat, q)
    return tensor
