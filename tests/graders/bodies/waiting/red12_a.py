"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...).

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_a.py.)
"""
import threading

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for w in works:
        w.wait()


# -- lesson 03: overlapped_step ----------------------------------------------------------------

# WRONG (no overlap): the real product runs BEFORE posting, on a copy of the weight made
# with torch.tensor(weight), which the Watched weight does not follow; a one-row "warm-up"
# product in flight is the only compute span the grader sees.
def step_copy_by_constructor(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    plain = torch.tensor(weight)                     # a plain tensor: no longer watched
    product = block @ plain                          # the whole product, before any post
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight                           # a warm-up row, in flight
    _wait(works)
    return product


# WRONG (no overlap): the product after every wait, on the weight's values read element by
# element with .item() into a new tensor (no span), and a one-row check in flight.
def step_product_after_wait_via_item(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    ok = bool(torch.isfinite(block[:1] @ weight).all())   # "sanity check" in flight
    _wait(works)
    k, m = weight.shape
    values = torch.tensor([x.item() for x in weight.reshape(-1)], dtype=block.dtype)
    product = block @ values.reshape(k, m)
    assert ok
    return product


# RIGHT: receives into a scratch buffer of its own, computes in flight, waits, then copies
# the scratch into recv_buf (recv_buf is written once, after the wait).
def step_scratch_then_copy(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    scratch = torch.empty_like(recv_buf)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, scratch, prev)])
    product = torch.mm(block, weight)
    _wait(works)
    recv_buf.copy_(scratch)
    return product


# -- lesson 03: safe_ring_shift ------------------------------------------------------------------

# RIGHT: a helper thread posts the blocking send while the main thread blocks in recv into
# a new buffer; joined before returning (no deadlock: each rank's send meets the next
# rank's recv whatever the order).
def shift_send_in_thread(tensor):
    rank, ws, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    sender = threading.Thread(target=dist.send, args=(tensor, nxt))
    sender.start()
    dist.recv(received, src=prev)
    sender.join()
    return received


# -- more of lesson 03: safe_ring_shift ------------------------------------------------------------

# WRONG: the zero-size shortcut of round 9, fixed for the shape only: torch.empty(shape) is
# float32 whatever the tensor's dtype, so a (0, 3) int64 tensor comes back float32. The only
# zero-size case of safe_ring_shift is float32.
def shift_empty_shortcut_default_dtype(tensor):
    if tensor.numel() == 0:
        return torch.empty(tensor.shape)
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    return out


_LAST = {}


# RIGHT (arguable): the reference, keeping the last result in a module dict "for the
# notebook to inspect" (never written again, only replaced by the next call's result).
def shift_remembers_last_result(tensor):
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    _LAST["result"] = out
    return out


# WRONG: the blocking send in a helper thread that is never joined ("it finishes by itself"):
# the function returns while its send may still be in flight, so the caller may change
# `tensor` before the next rank has it. A blocking send still sitting in its call is on no
# record yet, so nothing is "never waited for".
def shift_send_thread_not_joined(tensor):
    rank, ws, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    threading.Thread(target=dist.send, args=(tensor, nxt), daemon=True).start()
    dist.recv(received, src=prev)
    return received
