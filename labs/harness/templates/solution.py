"""Reference solutions for lesson NN (labs/<module>.py): the exercises' bodies, nothing else.

TEMPLATE: copy to solutions/<module>.py (see lesson.py next to this file).
"""
import torch
import torch.distributed as dist


def swap_with_partner(tensor):
    """One batch with the partner; the odd one out keeps a copy of its own."""
    partner = dist.get_rank() ^ 1
    if partner == dist.get_world_size():
        return tensor.clone()
    theirs = torch.empty_like(tensor)
    ops = [dist.P2POp(dist.isend, tensor, partner), dist.P2POp(dist.irecv, theirs, partner)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return theirs
