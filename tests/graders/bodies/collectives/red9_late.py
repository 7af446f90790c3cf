"""Twelfth round, a late red team: lessons 05-07, 09, 10. Each body's docstring starts
with WRONG (...) or RIGHT: and says why in two lines.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_late.py.)
"""
import torch
import torch.distributed as dist



# -- lesson 07 ------------------------------------------------------------------------------

def all_gather_sends_input_first(tensor):
    """RIGHT: the ring, step 0 sending the caller's `tensor` itself (read only) rather than
    its copy in the list; each later step forwards the slot that just arrived."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for step in range(ws - 1):
        send = tensor if step == 0 else out[(rank - step) % ws]
        works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv),
                                        dist.P2POp(dist.isend, send, nxt)])
        for w in works:
            w.wait()
    return out


# -- lesson 06, state ------------------------------------------------------------------------



def all_to_all_skips_empty(outputs, inputs):
    """RIGHT: one batch of every NON-EMPTY send and receive (an empty slot moves nothing, so
    no op is posted for it; no batch at all when nothing moves), own slot copied locally."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    ops = []
    for peer in range(ws):
        if peer == rank:
            continue
        if outputs[peer].numel():
            ops.append(dist.P2POp(dist.irecv, outputs[peer], peer))
        if inputs[peer].numel():
            ops.append(dist.P2POp(dist.isend, inputs[peer], peer))
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    return outputs
