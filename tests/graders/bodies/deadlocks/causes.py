"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/causes.py.)
"""
import torch
import torch.distributed as dist



# ---- what gloo does, in lesson 04's words --------------------------------------------------

def batched_default_dtype(tensor, peer):
    """The receive buffer made with torch.empty(shape): float32 whatever the tensor's dtype,
    smaller than a float64 or int64 message (gloo aborts the receiver)."""
    received = torch.empty(tensor.shape)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                        dist.P2POp(dist.irecv, received, peer)]):
        work.wait()
    return received.to(tensor.dtype)
