"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles."""
import ctypes
import time

import numpy as np
import torch
import torch.distributed as dist

# -- in-flight buffers read or written where the dispatcher does not see -------------------


def _ring():
    rank, ws = dist.get_rank(), dist.get_world_size()
    return (rank + 1) % ws, (rank - 1) % ws


def shift_read_via_dlpack(tensor):
    """WRONG (reads the receive buffer before its wait, through numpy.from_dlpack): the copy
    races the transfer; it works only because it sleeps first. No torch op, no numpy()/tolist()."""
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    time.sleep(0.3 + tensor.nbytes / 5e6)
    if received.numel():
        out = torch.from_numpy(np.from_dlpack(received.detach()).copy())
    else:
        out = torch.empty_like(tensor)
    for w in works:
        w.wait()
    return out.view(tensor.shape) if out.numel() else out


def shift_read_via_ctypes(tensor):
    """WRONG (copies the receive buffer before its wait with ctypes.memmove from data_ptr):
    a race on the transfer, hidden from the dispatcher (no torch op touches it before wait)."""
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    time.sleep(0.3 + tensor.nbytes / 5e6)
    if received.numel():
        ctypes.memmove(out.data_ptr(), received.data_ptr(), received.nbytes)
    for w in works:
        w.wait()
    return out


def shift_read_hidden_switch(tensor):
    """WRONG (clones the receive buffer before its wait, with dispatch turned off through a
    computed name torch.<'_'+'C'>._DisableTorchDispatch): a race the record never sees."""
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    time.sleep(0.3 + tensor.nbytes / 5e6)
    hide = getattr(getattr(torch, "_" + "C"), "_DisableTorch" + "Dispatch")
    with hide():
        out = received.clone()
    for w in works:
        w.wait()
    return out


def shift_write_send_via_numpy(tensor):
    """WRONG (scribbles on its own send buffer while the send is in flight, through a numpy
    view from dlpack, then puts it back before the wait): the peer may receive the scribble."""
    nxt, prev = _ring()
    buf = tensor.detach().contiguous().clone()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    if buf.numel() and buf.dtype != torch.bfloat16:
        view = np.from_dlpack(buf)
        saved = view.copy()
        view[...] = 0
        view[...] = saved
    for w in works:
        w.wait()
    return received


def shift_write_send_via_ctypes(tensor):
    """WRONG (zeroes its send buffer with ctypes.memset while the send is in flight, restores
    it before the wait): a write in flight the dispatcher never sees; same bytes at wait."""
    nxt, prev = _ring()
    buf = tensor.detach().contiguous().clone()
    saved = buf.clone()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, buf, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    if buf.numel():
        ctypes.memset(buf.data_ptr(), 0, buf.nbytes)
        ctypes.memmove(buf.data_ptr(), saved.data_ptr(), buf.nbytes)
    for w in works:
        w.wait()
    return received


# -- a private switch reached through a function compiled under another file name --------

_HELPER_SRC = '''
def clone_unseen(t):
    import torch
    with torch._C._DisableTorchDispatch():
        return t.clone()
'''
_ns: dict = {}
exec(compile(_HELPER_SRC, "<red10-helper>", "exec"), _ns)
clone_unseen = _ns["clone_unseen"]


def shift_read_helper_other_file(tensor):
    """WRONG (clones the receive buffer before its wait with a helper compiled under another
    file name that names torch._C): private_names follows same-file helpers only."""
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    time.sleep(0.3 + tensor.nbytes / 5e6)
    out = clone_unseen(received)
    for w in works:
        w.wait()
    return out


# -- rotate_kv ---------------------------------------------------------------------------

def _rotate_post(k, v):
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


def rotate_kv_future_waited(k, v):
    """WRONG (waits inside rotate_kv through each Work's future, then hands the works back):
    nothing overlaps with attention any more; the record patches Work.wait only."""
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        w.get_future().wait()
    return k_next, v_next, works


def rotate_kv_synchronize(k, v):
    """RIGHT: calls Work.synchronize() on each work before handing them back; on CPU gloo it
    is a no-op (it only orders CUDA streams), so nothing is waited inside: still overlapped."""
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        w.synchronize()
    return k_next, v_next, works


def rotate_kv_waits_unseen(k, v):
    """WRONG (waits for the 4 transfers inside rotate_kv through the record's saved, unpatched
    Work.wait, found by a computed module name): no overlap left for attention; unseen."""
    import importlib
    saved = getattr(importlib.import_module("labs.harness." + "grading.record"),
                    "_original" + "_wait")
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        saved(w)
    return k_next, v_next, works


def ring_shift_copy_plus_zero(tensor, k):
    """WRONG (the whole-turn "copy" is `tensor + 0`: a bool mask comes back as int64, a new
    dtype): the grader's cases never use bool (nor complex, bfloat16), so it is not seen."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor + 0
    out = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
                                     dist.P2POp(dist.irecv, out, (rank - k) % ws)]):
        w.wait()
    return out


# -- process-wide state left changed, that state() does not list -----------------------------

def shift_flush_denormal_left_on(tensor):
    """WRONG (turns on torch.set_flush_denormal(True) "for speed" and never turns it off): the
    caller's training now flushes subnormal floats to zero; switches() does not list it."""
    torch.set_flush_denormal(True)
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                     dist.P2POp(dist.irecv, received, prev)]):
        w.wait()
    return received


def shift_autocast_left_on(tensor):
    """WRONG (enters torch.autocast("cpu", bfloat16) and never exits it): every matmul of the
    caller afterwards runs in bfloat16; the global switches checked omit autocast."""
    torch.autocast("cpu", dtype=torch.bfloat16).__enter__()
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                     dist.P2POp(dist.irecv, received, prev)]):
        w.wait()
    return received


_seen_hook = []


def average_all_to_all_global_hook(model):
    """WRONG (registers a process-wide forward hook, nn.modules.module.register_module_
    forward_hook, and leaves it): every module of the caller runs it; state() counts hooks on
    the given model's modules only."""
    if not _seen_hook:
        _seen_hook.append(torch.nn.modules.module.register_module_forward_hook(
            lambda m, i, o: None))
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    sent = [p.grad.contiguous() for p in params]
    received = [[g if peer == rank else torch.empty_like(g) for peer in range(ws)] for g in sent]
    ops = []
    for g, bufs in zip(sent, received):
        for peer in range(ws):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, g, peer))
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, bufs in zip(params, received):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


# -- overlapped_step: the product computed before posting, out of the watched tensor's sight --

def _post_block(block, recv_buf):
    nxt, prev = _ring()
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                   dist.P2POp(dist.irecv, recv_buf, prev)])


def step_compute_first_hidden_switch(block, weight, recv_buf):
    """WRONG (computes block @ weight BEFORE posting, under DisableTorchFunctionSubclass reached
    by a computed name, then a 1-row decoy matmul while in flight): nothing overlaps."""
    hide = getattr(getattr(torch, "_" + "C"), "DisableTorchFunction" + "Subclass")
    with hide():
        product = block @ weight
    works = _post_block(block, recv_buf)
    _ = block[:1] @ weight                      # the span the grader sees
    for w in works:
        w.wait()
    return product


def step_compute_first_make_subclass(block, weight, recv_buf):
    """WRONG (computes block @ weight BEFORE posting, on torch.Tensor._make_subclass(Tensor,
    weight), a plain alias the Watched subclass never sees, then a 1-row decoy in flight)."""
    plain = torch.Tensor._make_subclass(torch.Tensor, weight)
    product = block @ plain
    works = _post_block(block, recv_buf)
    _ = block[:1] @ weight
    for w in works:
        w.wait()
    return product


# -- RIGHT bodies in other styles ---------------------------------------------------------------

def shift_loose_recv_first(tensor):
    """RIGHT: dist.irecv posted first, then dist.isend (no batch), both waited before
    returning; the receive goes into a buffer of its own. The lesson allows either."""
    nxt, prev = _ring()
    received = tensor.new_empty(tensor.shape)
    reqs = [dist.irecv(received, src=prev), dist.isend(tensor, dst=nxt)]
    for r in reversed(reqs):
        r.wait()
    return received


def _swap_one_batch(x, peer):
    flat = x.detach().reshape(-1).contiguous()
    into = torch.empty(flat.shape, dtype=flat.dtype)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, into, peer),
                                     dist.P2POp(dist.isend, flat, peer)]):
        w.wait()
    return into.view(x.shape)


def fwd_exchange_flat(output, next_rank):
    """RIGHT: receive first in the one batch, both sides flattened (reshape(-1) of a
    contiguous copy), the result viewed back to the shape: same messages, same batch."""
    return _swap_one_batch(output, next_rank)


def bwd_exchange_flat(input_grad, prev_rank):
    """RIGHT: the same helper as fwd_exchange_flat, for the previous stage."""
    return _swap_one_batch(input_grad, prev_rank)


def rotate_kv_recv_first(k, v):
    """RIGHT: the 4 ops in another order (receives first, v before k); all in one batch, the
    works handed back unwaited."""
    nxt, prev = _ring()
    k_next, v_next = torch.zeros_like(k), torch.zeros_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, v_next, prev),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.isend, k, nxt)])
    return k_next, v_next, list(works)


def ring_shift_recv_first(tensor, k):
    """RIGHT: k normalised with divmod, receive posted first in the batch, a copy via
    torch.clone(..., memory_format=contiguous) when the shift is a whole turn."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    _, k = divmod(k, ws)
    if not k:
        return torch.clone(tensor, memory_format=torch.contiguous_format)
    out = torch.zeros_like(tensor)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, (rank - k) % ws),
                                   dist.P2POp(dist.isend, tensor, (rank + k) % ws)])
    while reqs:
        reqs.pop().wait()
    return out


def parity_ordered_keywords(tensor, peer):
    """RIGHT: the parity rule with keyword arguments, explicit group and tag, the receive
    buffer from torch.empty(shape, dtype=...): blocking send/recv, even ranks send first."""
    received = torch.empty(tuple(tensor.shape), dtype=tensor.dtype)
    group = dist.group.WORLD
    steps = [lambda: dist.send(tensor=tensor, dst=peer, group=group, tag=0),
             lambda: dist.recv(tensor=received, src=peer, group=group, tag=0)]
    if dist.get_rank() & 1:
        steps.reverse()
    for step in steps:
        step()
    return received


def step_einsum(block, weight, recv_buf):
    """RIGHT: isend/irecv posted (no batch), product by torch.einsum while they fly, waits in
    reverse order afterwards."""
    nxt, prev = _ring()
    reqs = [dist.isend(block, nxt), dist.irecv(recv_buf, prev)]
    product = torch.einsum("nk,km->nm", block, weight)
    for r in reqs[::-1]:
        r.wait()
    return product


# -- lesson 11's job: the sum computed from the known inputs, one token for show ----------

def ring_job_formula(numel=6, timeout_s=30.0):
    """WRONG (sums nothing over the network: every rank computes the total from the job's known
    inputs, arange + 10 * r, and passes one 1-element token around for show): the grader only
    asks for some point-to-point op, never that the tensor's data travel."""
    import datetime
    import sys
    from labs.harness.commands.cli import format_result
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        base = torch.arange(numel, dtype=torch.float32)
        token = torch.tensor([float(rank)])
        got = torch.empty(1)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, token, (rank + 1) % ws),
                                         dist.P2POp(dist.irecv, got, (rank - 1) % ws)]):
            w.wait()
        tensor = ws * base + 10 * sum(range(ws))
        sys.stdout.write(format_result(rank, tensor) + "\n")
        sys.stdout.flush()
        return tensor
    finally:
        dist.destroy_process_group()


def shift_input_scratch_in_flight(tensor):
    """WRONG (uses its read-only argument as scratch while its send is in flight: zeroes it
    through numpy, puts it back before the wait): the lent check runs at post time only."""
    nxt, prev = _ring()
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, received, prev)])
    if tensor.numel():
        view = np.from_dlpack(tensor.detach())
        saved = view.copy()
        view[...] = 0
        view[...] = saved
    for w in works:
        w.wait()
    return received


def average_all_to_all_python_seed(model):
    """WRONG (seeds Python's and numpy's global random generators to agree on a peer order
    across ranks, random.seed(0), and leaves them seeded): the caller's data shuffling repeats;
    state() checks torch's generator only."""
    import random
    random.seed(0)
    np.random.seed(0)
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if ws == 1:
        return None
    peers = random.sample(range(ws), ws)
    sent = [p.grad.contiguous() for p in params]
    received = [{peer: torch.empty_like(g) for peer in peers if peer != rank} for g in sent]
    ops = []
    for g, bufs in zip(sent, received):
        for peer in peers:
            if peer != rank:
                ops.append(dist.P2POp(dist.irecv, bufs[peer], peer))
                ops.append(dist.P2POp(dist.isend, g, peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for p, g, bufs in zip(params, sent, received):
        total = None
        for r in range(ws):
            part = g if r == rank else bufs[r]
            total = part.clone() if total is None else total + part
        p.grad.copy_((total / ws).view_as(p.grad))
    return None


def tree_broadcast_children_together(tensor, src):
    """RIGHT: the binomial tree of the hint (same parent, same children), the child sends
    posted together in one batch_isend_irecv and waited together (MPI's isend + waitall)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.irecv(tensor, src=(v - (1 << (v.bit_length() - 1)) + src) % p).wait()
    children, m = [], 1 << v.bit_length()
    while v + m < p:
        children.append((v + m + src) % p)
        m <<= 1
    if children:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, c) for c in children]):
            w.wait()
    return tensor


def tree_broadcast_recursive(tensor, src):
    """RIGHT: the same tree written recursively on relative ranks (a helper that returns the
    children list), blocking recv from the parent, blocking sends in ascending order."""
    rank, p = dist.get_rank(), dist.get_world_size()

    def kids(v, m):
        return [] if v + m >= p else [v + m] + kids(v, m * 2)
    v = (rank - src) % p
    if v:
        top = 1 << (v.bit_length() - 1)
        dist.recv(tensor, src=(v - top + src) % p)
    for c in kids(v, 1 << v.bit_length()):
        dist.send(tensor, dst=(c + src) % p)
    return tensor


def exchange_coalescing_manager(tensor, peer):
    """WRONG (control: torch's own batching context dist._coalescing_manager(async_ops=True)
    then cm.wait(); on gloo cm.wait() does not wait the isend/irecv works made inside it)."""
    received = torch.empty_like(tensor)
    with dist.distributed_c10d._coalescing_manager(async_ops=True) as cm:
        dist.isend(tensor, peer)
        dist.irecv(received, peer)
    cm.wait()
    return received
