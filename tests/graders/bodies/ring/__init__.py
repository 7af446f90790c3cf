"""Lesson 05 (ring_reduce_scatter, ring_all_reduce, pipelined_ring_all_reduce): wrong bodies,
and correct ones in another style."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring

reference_pipelined = copies.ring.pipelined_ring_all_reduce
reference_ring = copies.ring.ring_all_reduce
reference_reduce_scatter = copies.ring.ring_reduce_scatter


def _own_chunk(tensor):
    start, stop = chunk_bounds(tensor.numel(), dist.get_world_size())[dist.get_rank()]
    return tensor.view(-1)[start:stop]


# ---- ring_reduce_scatter --------------------------------------------------------------------

def rs_all_reduce(tensor):
    """Right values: dist.all_reduce does the work, the body returns its chunk."""
    dist.all_reduce(tensor)
    return _own_chunk(tensor)


def rs_whole_tensors(tensor):
    """Right values: whole tensors passed along the ring, then its own chunk kept."""
    rank, n, nxt, prev = _ring()
    outgoing, total = tensor.clone(), tensor.clone()
    for _ in range(n - 1):
        incoming = torch.empty_like(tensor)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, nxt),
                                            dist.P2POp(dist.irecv, incoming, prev)]):
            work.wait()
        total += incoming
        outgoing = incoming
    mine = _own_chunk(tensor)
    mine.copy_(_own_chunk(total))
    return mine


def rs_float32(tensor):
    """bfloat16 reduced in a float32 copy: the messages are float32, twice the bytes."""
    if tensor.dtype != torch.bfloat16:
        return reference_reduce_scatter(tensor)
    wide = tensor.float()
    reference_reduce_scatter(wide)
    mine = _own_chunk(tensor)
    mine.copy_(_own_chunk(wide))
    return mine


def rs_isend_irecv(tensor):
    """Correct: isend/irecv pairs, a fresh receive buffer every step."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for step in range(n - 1):
        target = chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(target)
        works = [dist.irecv(incoming, prev), dist.isend(chunks[(rank - step - 1) % n], nxt)]
        for work in works:
            work.wait()
        target += incoming
    return chunks[rank]


# ---- ring_all_reduce ------------------------------------------------------------------------

def ring_builtin(tensor):
    """Right values from dist.all_reduce: not a ring."""
    dist.all_reduce(tensor)
    return tensor


def ring_half_builtin(tensor):
    """The reduce-scatter by hand, then dist.all_gather does the other half."""
    rank, n, _, _ = _ring()
    if n == 1:
        return tensor
    reference_reduce_scatter(tensor)
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    width = bounds[0][1] - bounds[0][0]
    padded = torch.zeros(width, dtype=tensor.dtype)
    padded[:bounds[rank][1] - bounds[rank][0]] = flat[bounds[rank][0]:bounds[rank][1]]
    parts = [torch.empty_like(padded) for _ in range(n)]
    dist.all_gather(parts, padded)
    for (a, b), part in zip(bounds, parts):
        flat[a:b] = part[:b - a]
    return tensor


def ring_pass_along(tensor):
    """PyTorch's tutorial ring (as corrected in pytorch/pytorch#31572): whole tensors go
    round, n-1 times the tensor per rank, not 2(n-1)/n."""
    rank, n, right, left = _ring()
    send = tensor.view(-1)
    send_buff, recv_buff, accum = send.clone(), send.clone(), send.clone()
    for i in range(n - 1):
        if i % 2 == 0:
            send_req = dist.isend(send_buff, right)
            dist.recv(recv_buff, left)
            accum[:] += recv_buff[:]
        else:
            send_req = dist.isend(recv_buff, right)
            dist.recv(send_buff, left)
            accum[:] += send_buff[:]
        send_req.wait()
    send[:] = accum[:]
    return tensor


def ring_bf16_in_float32(tensor):
    """bfloat16 summed in a float32 copy: right to rounding, but float32 on the wire."""
    if tensor.dtype != torch.bfloat16:
        return reference_ring(tensor)
    wide = tensor.float()
    reference_ring(wide)
    tensor.copy_(wide)
    return tensor


def ring_send_first(tensor):
    """Blocking send, then receive, on every rank: gloo's send waits for the receive."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    for step in range(n - 1):
        a, b = bounds[(rank - step - 1) % n]
        c, d = bounds[(rank - step - 2) % n]
        incoming = torch.empty(d - c, dtype=tensor.dtype)
        dist.send(flat[a:b], nxt)
        dist.recv(incoming, prev)
        flat[c:d] += incoming
    return reference_ring(tensor)


def _parity_step(send, recv, nxt, prev, rank):
    if rank % 2 == 0:
        dist.send(send, nxt)
        dist.recv(recv, prev)
    else:
        dist.recv(recv, prev)
        dist.send(send, nxt)


def ring_parity_blocking(tensor):
    """Correct: blocking send/recv ordered by parity, ceil(N/n)-sized chunks."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    if n == 1:
        return tensor
    width = -(-flat.numel() // n)
    chunks = [flat[min(i * width, flat.numel()):min((i + 1) * width, flat.numel())]
              for i in range(n)]
    for step in range(n - 1):                       # reduce-scatter
        target = chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(target)
        _parity_step(chunks[(rank - step - 1) % n], incoming, nxt, prev, rank)
        target += incoming
    for step in range(n - 1):                       # all-gather
        _parity_step(chunks[(rank - step) % n], chunks[(rank - step - 1) % n], nxt, prev, rank)
    return tensor


# ---- pipelined_ring_all_reduce ---------------------------------------------------------------

def pipelined_builtin(tensor, segment_bytes=4 << 20):
    return ring_builtin(tensor)


def pipelined_unsegmented(tensor, segment_bytes=4 << 20):
    """The plain ring: segment_bytes ignored."""
    return reference_ring(tensor)


def pipelined_elements(tensor, segment_bytes=4 << 20):
    """Segments of segment_bytes ELEMENTS: 4-8 times too big for float32-float64."""
    return reference_pipelined(tensor, segment_bytes * tensor.element_size())


def pipelined_step_batches(tensor, segment_bytes=4 << 20):
    """Wrong: every segment of a step in one batch, waited, then the adds: nothing is on the
    wire while it adds, and with one segment per chunk it is lesson 05's plain ring."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    if n == 1:
        return tensor
    seg = max(1, segment_bytes // flat.element_size())
    bounds = chunk_bounds(flat.numel(), n)

    def pieces(c):
        a, b = bounds[c]
        return [(s, min(s + seg, b)) for s in range(a, b, seg)]

    for t in range(2 * (n - 1)):
        out, into = pieces((rank - t - 1) % n), pieces((rank - t - 2) % n)
        bufs = [torch.empty(b - a, dtype=flat.dtype) if t < n - 1 else flat[a:b]
                for a, b in into]
        ops = [dist.P2POp(dist.isend, flat[a:b], nxt) for a, b in out]
        ops += [dist.P2POp(dist.irecv, buf, prev) for buf in bufs]
        for work in dist.batch_isend_irecv(ops) if ops else []:
            work.wait()
        if t < n - 1:
            for (a, b), buf in zip(into, bufs):
                flat[a:b] += buf
    return tensor
