"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


# lesson 01 ------------------------------------------------------------------------------------

def ping_pong_subgroup_broadcast(tensor, rounds):
    """Ranks 0 and 1 bounce the tensor with broadcasts inside a subgroup of their own."""
    pair = dist.new_group([0, 1])
    rank = dist.get_rank()
    if rank > 1:
        return None
    current, replies, seconds, received = tensor.clone(), [], [], []
    for _ in range(rounds):
        dist.broadcast(current, 0, group=pair)
        if rank == 1:
            received.append(current.clone())
            current += 1
        dist.broadcast(current, 1, group=pair)
        replies.append(current.clone())
        seconds.append(1e-3)
    return (replies, seconds) if rank == 0 else received


def pass_token_send_object(token):
    """The ring, each hop with send_object_list / recv_object_list (pickled bytes)."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return token.clone()
    if rank == 0:
        dist.send_object_list([token], dst=nxt)
        box = [None]
        dist.recv_object_list(box, src=prev)
        return box[0]
    box = [None]
    dist.recv_object_list(box, src=prev)
    held = box[0] + rank
    dist.send_object_list([held], dst=nxt)
    return held


def pass_token_isend_unwaited(token):
    """Forwards with isend and never waits for it."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        dist.isend(token.clone(), dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    held += rank
    dist.isend(held, dst=nxt)
    return held.clone()
