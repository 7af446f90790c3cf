"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist



def _wait(works):
    for work in works:
        work.wait()


# lesson 04 ------------------------------------------------------------------------------------

def batched_tagged_reverse(tensor, peer):
    """The receive first in the batch, a tag, waits in reverse order."""
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer, tag=5),
                                    dist.P2POp(dist.isend, tensor, peer, tag=5)])
    for work in works[::-1]:
        work.wait()
    return out


def parity_world_group(tensor, peer):
    """Parity order, the group and the tag passed explicitly."""
    world = dist.group.WORLD
    out = torch.zeros_like(tensor)
    if dist.get_rank(world) % 2 == 0:
        dist.send(tensor, dst=peer, group=world, tag=1)
        dist.recv(out, src=peer, group=world, tag=1)
    else:
        dist.recv(out, src=peer, group=world, tag=1)
        dist.send(tensor, dst=peer, group=world, tag=1)
    return out


def checked_two_by_three(tensor, peer):
    """Its own wording ('2x3'), isend/irecv pairs for both phases."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, theirs, peer),
                                    dist.P2POp(dist.isend, mine, peer)])
    _wait(works)
    shape, dtype = decode_meta(theirs)
    if tuple(shape) != tuple(tensor.shape) or dtype != tensor.dtype:
        def show(s):
            return "x".join(map(str, s)) or "scalar"
        raise ValueError(f"mismatch: mine {show(tensor.shape)} {dtype_name(tensor.dtype)}, "
                         f"peer's {show(shape)} {dtype_name(dtype)}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer),
                                  dist.P2POp(dist.isend, tensor, peer)]))
    return out


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")
