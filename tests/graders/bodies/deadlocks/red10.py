"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import torch
import torch.distributed as dist


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
