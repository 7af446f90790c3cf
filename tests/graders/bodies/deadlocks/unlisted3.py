"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies
reference_exchange = copies.deadlocks.exchange_batched


# lesson 04 ------------------------------------------------------------------------------------

def batched_receive_waited_only(tensor, peer):
    """Waits for the receive; the send's request is dropped."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    works[1].wait()
    return received


def parity_by_rank_order(tensor, peer):
    """Blocking, ordered by rank < peer instead of by parity."""
    received = torch.empty_like(tensor)
    if dist.get_rank() < peer:
        dist.send(tensor, peer)
        dist.recv(received, peer)
    else:
        dist.recv(received, peer)
        dist.send(tensor, peer)
    return received


def checked_exchange_builtin_meta(tensor, peer):
    """The metadata through an all_gather of every rank's, the data point to point."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    shape, dtype = decode_meta(everyone[peer])
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    return reference_exchange(tensor, peer)


def batched_polls_is_completed(tensor, peer):
    """Polls the requests instead of waiting for them."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    while not all(work.is_completed() for work in works):
        pass
    return received
