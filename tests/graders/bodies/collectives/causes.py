"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/causes.py.)
"""
import torch.distributed as dist



def all_to_all_itself_included(outputs, inputs):
    """Every rank sends to every rank, itself included (gloo has no pair to itself)."""
    ws = dist.get_world_size()
    ops = [dist.P2POp(dist.irecv, outputs[p], p) for p in range(ws)] + \
        [dist.P2POp(dist.isend, inputs[p], p) for p in range(ws)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return outputs
