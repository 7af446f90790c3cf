"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow)."""
import datetime
import sys

import torch
import torch.distributed as dist


# -- lesson 11: ring_job ---------------------------------------------------------------------

def _join(timeout_s):
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))


def _report(rank, tensor):
    from labs.harness.commands.cli import format_result
    sys.stdout.write(format_result(rank, tensor) + "\n")
    sys.stdout.flush()


def ring_job_star(numel=6, timeout_s=30.0):
    """WRONG (not a ring: rank 0 receives every tensor, sums, and sends the total back, point
    to point, with real data): the grader only asks for some point-to-point op and no
    collective, never the ring's partners or chunked messages."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        if rank == 0:
            for peer in range(1, ws):
                buf = torch.empty_like(tensor)
                dist.recv(buf, peer)
                tensor += buf
            for peer in range(1, ws):
                dist.send(tensor, peer)
        else:
            dist.send(tensor, 0)
            dist.recv(tensor, 0)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_torch_chunk(numel=6, timeout_s=30.0):
    """WRONG (a hand-written ring cut with tensor.chunk(ws): chunk returns FEWER than ws pieces
    when numel < ws (numel 0, 1, 2 on 3 ranks; or 4 elements on 3 ranks gives 2+2), so the
    ring indexes past the end or loses elements): correct only for the grader's numel=7 on 3
    ranks; the contract says any numel >= 0."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        if ws > 1:
            chunks = list(tensor.chunk(ws))
            nxt, prv = (rank + 1) % ws, (rank - 1) % ws
            for step in range(ws - 1):
                s, r = (rank - step) % ws, (rank - step - 1) % ws
                buf = torch.empty_like(chunks[r])
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[s], nxt),
                                                 dist.P2POp(dist.irecv, buf, prv)]):
                    w.wait()
                chunks[r] += buf
            for step in range(ws - 1):
                s, r = (rank + 1 - step) % ws, (rank - step) % ws
                buf = torch.empty_like(chunks[r])
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[s], nxt),
                                                 dist.P2POp(dist.irecv, buf, prv)]):
                    w.wait()
                chunks[r].copy_(buf)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


# -- lesson 03: overlapped_step --------------------------------------------------------------

def step_copy_weight_in_flight(block, weight, recv_buf):
    """WRONG (no overlap: while the transfers fly it only copies the weight into a staging
    buffer; it waits, THEN computes block @ staged): the copy_ of the watched weight into a
    plain tensor shows as the compute span, and the real product, on the plain copy, is
    invisible to the trace."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, (rank + 1) % ws),
                                    dist.P2POp(dist.irecv, recv_buf, (rank - 1) % ws)])
    staged = torch.empty(tuple(weight.shape), dtype=block.dtype)
    staged.copy_(weight)
    for w in works:
        w.wait()
    return block @ staged


def ring_job_barrier_before_leaving(numel=6, timeout_s=30.0):
    """RIGHT (the ring from lesson 05, then the common torchrun idiom: dist.barrier() so that
    no rank tears the group down while a peer still finishes, then destroy in `finally`):
    a barrier moves no data; the course itself says a barrier is ignored."""
    from solutions.ring import ring_all_reduce
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        dist.barrier()
        return tensor
    finally:
        dist.destroy_process_group()


# -- lesson 03: safe_ring_shift --------------------------------------------------------------

# -- lesson 10: tree_broadcast ---------------------------------------------------------------

def tree_broadcast_mpich_order(tensor, src):
    """RIGHT (the other binomial tree, MPICH's: in relative ranks v = (rank - src) % p, v > 0
    receives from v minus its LOWEST set bit, then sends to v + m for the powers of two m
    below that bit, largest first; the root starts with the largest power below p). Every
    rank receives once, ceil(log2 p) rounds, holders double each round."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    v = (rank - src) % p
    top = 1
    while top < p:
        top <<= 1
    low = (v & -v) if v else top
    if v:
        dist.recv(tensor, (v - low + src) % p)
    m = low >> 1
    while m:
        if v + m < p:
            dist.send(tensor, (v + m + src) % p)
        m >>= 1
    return tensor


def ring_job_widened(numel=6, timeout_s=30.0):
    """WRONG (the ring runs on a float64 copy "for accuracy", copied back: every message is
    float64, twice the bytes; lesson 05's rule is the tensor's own dtype on the wire, never
    widened): the job grader checks the values only, never the messages' dtype."""
    from solutions.ring import ring_all_reduce
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        wide = tensor.double()
        ring_all_reduce(wide)
        tensor.copy_(wide)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_device_backend(numel=6, timeout_s=30.0):
    """RIGHT (joins with the device-qualified backend string "cpu:gloo", which torch documents
    for init_process_group: gloo for CPU tensors; the rest as the reference)."""
    from solutions.ring import ring_all_reduce
    dist.init_process_group("cpu:gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


# -- lesson 02: exchange_with_neighbours -----------------------------------------------------

_NARROW_INTS = (torch.int8, torch.uint8, torch.int16, torch.int32)


def neighbours_widen_small_ints(tensor):
    """WRONG (a defensive copy from a forum answer, "gloo and small integer types": int8,
    uint8, int16 and int32 tensors travel as int64 and are narrowed on arrival: two to eight
    times the bytes, not the tensor's own dtype; the contract says any dtype): the grader's
    cases have no 8/16/32-bit integer tensor, so the widened path is never seen."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    wire = tensor.to(torch.int64) if tensor.dtype in _NARROW_INTS else tensor
    left, right = (rank - 1) % ws, (rank + 1) % ws
    from_left, from_right = torch.empty_like(wire), torch.empty_like(wire)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, left),
                                     dist.P2POp(dist.isend, wire, right),
                                     dist.P2POp(dist.irecv, from_left, left),
                                     dist.P2POp(dist.irecv, from_right, right)]):
        w.wait()
    return from_left.to(tensor.dtype), from_right.to(tensor.dtype)


def shift_halves_as_float32(tensor):
    """WRONG (float16 / bfloat16 tensors travel as float32 and are cast back: twice the
    bytes, not the tensor's own dtype; the contract says any float or integer dtype): the
    grader's shift cases are float32, int64 and float64 only."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    wire = tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor
    out = torch.empty_like(wire)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, (rank + 1) % ws),
                                     dist.P2POp(dist.irecv, out, (rank - 1) % ws)]):
        w.wait()
    return out.to(tensor.dtype)


def ring_job_validates_first(numel=6, timeout_s=30.0):
    """RIGHT (arguably: checks its argument before joining, the usual fail-fast style: a
    negative numel raises ValueError on every rank, so torchrun reports the failed rank and
    no group is left behind; otherwise the reference's job)."""
    from solutions.ring import ring_all_reduce
    if numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


# -- lesson 08: fixed_average_gradients ------------------------------------------------------

def fixed_average_half_grads_in_float32(model):
    """WRONG (mixed precision "done safely": float16 / bfloat16 gradients are sent and
    received as float32 copies, averaged in float32 and cast back: twice the bytes on the
    wire, not the gradients themselves): the grader's models are float32 and float64 only,
    so the widened path is never seen; nothing in the contract limits the dtypes."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    wide = [p.grad.float() if p.grad.dtype in (torch.float16, torch.bfloat16) else p.grad
            for p in params]
    peers = [q for q in range(ws) if q != rank]
    inbox = {q: [torch.empty_like(g) for g in wide] for q in peers}
    ops = [dist.P2POp(dist.isend, g, q) for q in peers for g in wide] + \
        [dist.P2POp(dist.irecv, b, q) for q in peers for b in inbox[q]]
    for w in (dist.batch_isend_irecv(ops) if ops else []):
        w.wait()
    for k, p in enumerate(params):
        total = wide[k] + sum(inbox[q][k] for q in peers) if peers else wide[k].clone()
        p.grad = (total / ws).to(p.grad.dtype)


def ring_job_unwaited(numel=6, timeout_s=30.0):
    """WRONG (found in our last review): the pass-along ring whose isends are never waited;
    the job grader checked partners, dtype and counts, never the waits."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        t = torch.arange(numel, dtype=torch.float32) + 10 * rank
        held, total, kept = t.clone(), t.clone(), []
        for _ in range(ws - 1):
            kept.append(dist.isend(held.clone(), (rank + 1) % ws))
            got = torch.empty_like(t)
            dist.recv(got, (rank - 1) % ws)
            total += got
            held = got
        _report(rank, total)
        return total
    finally:
        dist.destroy_process_group()
