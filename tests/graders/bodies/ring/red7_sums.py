"""Seventh round, ours: what travels in a reduction (the partial sums, on the probe of
labs.harness.grading.sums), wrong and right bodies that no red team wrote.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red7_sums.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies._shared import half as _half


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


def ring_other_owner(tensor):
    """RIGHT: the ring where rank r ends its reduce-scatter with chunk r + 1 (the reference:
    chunk r). Each step still sends the running sum of the ranks before it."""
    return _ring(tensor, owner_shift=1)


def ring_accumulates_in_float64(tensor):
    """RIGHT: the ring adding in float64 (rounded back to the tensor's dtype): what travels
    is still the partial sums, in the tensor's own dtype."""
    return _ring(tensor, accumulate=torch.float64 if tensor.is_floating_point() else None)
