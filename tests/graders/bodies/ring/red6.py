"""Red team H: ring bodies."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


def _ring(tensor, send_tf=None, recv_tf=None, skip_empty=False):
    """A plain reduce-scatter + all-gather ring. send_tf(key, chunk) -> what goes on the wire;
    recv_tf(key, wire) -> the decoded values."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    flat = tensor.view(-1)
    N = flat.numel()
    bounds = chunk_bounds(N, n)
    chunks = [flat[a:b] for a, b in bounds]
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for step in range(2 * (n - 1)):
        out = chunks[(rank - step - 1) % n]
        into = chunks[(rank - step - 2) % n]
        key = (step, N, flat.dtype)
        wire_out = send_tf(key, out) if send_tf else out
        scratch = torch.empty_like(into)
        ops = []
        if not skip_empty or wire_out.numel():
            ops.append(dist.P2POp(dist.isend, wire_out, nxt))
        if not skip_empty or scratch.numel():
            ops.append(dist.P2POp(dist.irecv, scratch, prev))
        for w in dist.batch_isend_irecv(ops) if ops else []:
            w.wait()
        got = recv_tf(key, scratch) if recv_tf else scratch
        if step < n - 1:
            into.add_(got)
        else:
            into.copy_(got)
    return tensor


_INT = {torch.float32: torch.int32, torch.float64: torch.int64, torch.bfloat16: torch.int16,
        torch.float16: torch.int16, torch.int64: torch.int64}
_SENT, _RECEIVED = {}, {}
# XOR the mantissa bits only: the exponent stays the data's, so no NaN appears on the wire
_MASK = {torch.float32: 0x007FFFFF, torch.float64: 0x000FFFFFFFFFFFFF, torch.bfloat16: 0x007F,
         torch.float16: 0x03FF, torch.int64: -1}


def _xor_encode(key, chunk):
    bits = chunk.contiguous().view(_INT[chunk.dtype]).clone()
    prev = _SENT.get(key)
    _SENT[key] = bits
    return (bits ^ (prev & _MASK[chunk.dtype]) if prev is not None else bits.clone()
            ).view(chunk.dtype)


def _xor_decode(key, wire):
    x = wire.view(_INT[wire.dtype])
    prev = _RECEIVED.get(key)
    bits = x ^ (prev & _MASK[wire.dtype]) if prev is not None else x.clone()
    _RECEIVED[key] = bits
    return bits.view(wire.dtype)


def ring_xor_delta_wire(tensor):
    """WRONG (what travels): "delta compression": every message is the XOR of the chunk's
    bits with the message sent in the same ring step of the previous call of that size and
    dtype; the receiver XORs with what it decoded last time. The values are bit-exact, the
    messages have the reference's sizes, partners and dtype, but the wire carries no partial
    sums, only differences from an earlier call (a receiver that missed a call, or a new
    process, decodes garbage). graded.py rejects exactly this for contents=True methods;
    ring_all_reduce is compare="counts" without contents, so nothing looks at the bytes."""
    return _ring(tensor, _xor_encode, _xor_decode)


_MEMO = {}


def ring_memo_still_communicates(tensor):
    """WRONG (state between calls): a result cache keyed by this rank's own input. It still
    runs the whole ring every call (so no peer hangs, unlike the catalogued
    ring_memo_same_input), but when its own input repeats it overwrites the fresh sum with
    the cached one: stale as soon as another rank's input changed. The repeat call changes
    even ranks' inputs only, so odd ranks return a stale sum there, and nothing checks the
    repeat's values (ring_all_reduce has no contents comparison)."""
    key = (tensor.dtype, tuple(tensor.shape))
    mine = tensor.clone()
    hit = key in _MEMO and torch.equal(_MEMO[key][0], mine)
    _ring(tensor)
    if hit:
        tensor.copy_(_MEMO[key][1])
    _MEMO[key] = (mine, tensor.clone())
    return tensor


def ring_skips_empty_chunks(tensor):
    """RIGHT: the ring, but a step whose chunk is empty (numel < world size) posts no
    message for it: sender and receiver agree on every chunk's size, so both skip the same
    ones. Fewer (empty) messages, the same data."""
    return _ring(tensor, skip_empty=True)


def ring_negated_wire(tensor):
    """WRONG? (stand-in on the wire, stateless): each chunk travels negated and the receiver
    subtracts (reduce-scatter) or negates back (all-gather): IEEE a - (-b) == a + b, so every
    bit is the reference's, but the messages hold -partial sums, not the partial sums the
    contract says travel."""
    return _ring(tensor, lambda k, c: -c, lambda k, w: -w)
