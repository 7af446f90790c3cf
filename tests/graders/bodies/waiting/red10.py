"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""
import ctypes
import time

import numpy as np
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring

# -- in-flight buffers read or written where the dispatcher does not see -------------------


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


def step_einsum(block, weight, recv_buf):
    """RIGHT: isend/irecv posted (no batch), product by torch.einsum while they fly, waits in
    reverse order afterwards."""
    nxt, prev = _ring()
    reqs = [dist.isend(block, nxt), dist.irecv(recv_buf, prev)]
    product = torch.einsum("nk,km->nm", block, weight)
    for r in reqs[::-1]:
        r.wait()
    return product


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


def exchange_coalescing_manager(tensor, peer):
    """WRONG (control: torch's own batching context dist._coalescing_manager(async_ops=True)
    then cm.wait(); on gloo cm.wait() does not wait the isend/irecv works made inside it)."""
    received = torch.empty_like(tensor)
    with dist.distributed_c10d._coalescing_manager(async_ops=True) as cm:
        dist.isend(tensor, peer)
        dist.irecv(received, peer)
    cm.wait()
    return received
