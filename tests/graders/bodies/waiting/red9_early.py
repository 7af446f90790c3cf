"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_early.py.)
"""
import time

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for w in works:
        w.wait()


# -- WRONG ----------------------------------------------------------------------------------

def step_hidden_product_first(block, weight, recv_buf):
    """WRONG (no overlap): the real product is computed BEFORE posting, with the weight's
    torch-function subclass switched off (the watcher never sees it); a one-row token
    product runs in flight for the trace. Nothing real overlaps the transfer."""
    rank, ws, nxt, prev = _ring()
    with torch._C.DisableTorchFunctionSubclass():
        product = torch.mm(block, weight).as_subclass(torch.Tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    return product


def step_hidden_product_after_wait(block, weight, recv_buf):
    """WRONG (no overlap): token product in flight, the real product only after both waits,
    computed on the weight with the torch-function subclass disabled: the transfer is over
    before the work begins."""
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    with torch._C.DisableTorchFunctionSubclass():
        return torch.mm(block, weight).as_subclass(torch.Tensor)


def shift_flips_send_in_flight(tensor):
    """WRONG (send buffer written in flight): sends a private copy, then negates it twice
    while the send is in flight ("it is back before wait"): gloo may read it negated."""
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    mine = tensor.clone()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, nxt),
                                    dist.P2POp(dist.irecv, out, prev)])
    if mine.is_floating_point():
        mine.neg_()
        mine.neg_()
    else:
        mine.bitwise_not_()
        mine.bitwise_not_()
    _wait(works)
    return out


def shift_reads_before_wait(tensor):
    """WRONG (reads the receive buffer before wait): the copy returned is taken through
    numpy after a short sleep, before wait(): complete only if gloo happened to be done."""
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, out, prev)])
    time.sleep(0.05)
    early = torch.tensor(out.numpy().copy())
    _wait(works)
    return early


def step_tensordot(block, weight, recv_buf):
    """RIGHT: post both transfers, compute the product with torch.tensordot while they fly
    (another torch function for the same matmul), then wait for both."""
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, recv_buf, prev),
                                    dist.P2POp(dist.isend, block, nxt)])
    product = torch.tensordot(block, weight, dims=([1], [0]))
    _wait(reversed(works))
    return product


def step_product_in_thread(block, weight, recv_buf):
    """RIGHT: post both transfers, compute block @ weight on a helper thread (the main thread
    only joins it), then wait for both: the product is computed while the data travels."""
    import threading
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("p", torch.matmul(block, weight)))
    worker.start()
    worker.join()
    _wait(works)
    return box["p"]


def shift_tampers_with_grader(tensor):
    """WRONG (tampers with the grader): switches off the in-worker method comparison
    (graded.differences, graded.contents_problems), then shifts with the all_gather
    collective; safe_ring_shift's grader has no check of its own on the trace."""
    import labs.harness.grading.graded as graded
    graded.differences = lambda *a, **k: []
    graded.contents_problems = lambda *a, **k: []
    rank, ws = dist.get_rank(), dist.get_world_size()
    everyone = [torch.empty_like(tensor) for _ in range(ws)]
    dist.all_gather(everyone, tensor)
    return everyone[(rank - 1) % ws]


def shift_empty_shortcut(tensor):
    """WRONG (zero-size tensors): "nothing to send" shortcut returns torch.empty(0), float32
    of shape (0,), whatever the tensor's dtype and shape ((0, 3) int64 comes back wrong).
    safe_ring_shift's cases have no zero-size tensor; the rest is the reference."""
    if tensor.numel() == 0:
        return torch.empty(0)
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    return out
