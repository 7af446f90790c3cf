"""Lesson 04 (exchange_batched, exchange_parity_ordered, checked_exchange): wrong bodies,
and correct ones in another style."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta


def _wait(works):
    for work in works:
        work.wait()


def batched_into_input(tensor, peer):
    """Receives into the tensor it sends, and returns it."""
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor.clone(), peer),
                                  dist.P2POp(dist.irecv, tensor, peer)]))
    return tensor


def batched_two_batches(tensor, peer):
    """Right values on gloo, but the send and the receive in two batches."""
    received = torch.empty_like(tensor)
    sends = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer)])
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, received, peer)]) + sends)
    return received


def batched_blocking(tensor, peer):
    """Both ranks send first, blocking: the deadlock of notebook 04."""
    received = torch.empty_like(tensor)
    dist.send(tensor, peer)
    dist.recv(received, peer)
    return received


def batched_receive_first(tensor, peer):
    """Correct: the receive listed first, waited last."""
    received = tensor.new_empty(tensor.shape)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, received, peer),
                                    dist.P2POp(dist.isend, tensor, peer)])
    _wait(reversed(works))
    return received


def parity_send_first_everywhere(tensor, peer):
    """Every rank sends first: the parity is ignored, and the pair deadlocks."""
    return batched_blocking(tensor, peer)


def parity_batched(tensor, peer):
    """Right values, but batched: not the blocking, parity-ordered exchange asked for."""
    return batched_receive_first(tensor, peer)


def parity_keywords(tensor, peer):
    """Correct: the same parity order, written with keywords and the low bit."""
    received = tensor.new_empty(tensor.shape)
    if dist.get_rank() & 1:
        dist.recv(tensor=received, src=peer)
        dist.send(tensor=tensor, dst=peer)
    else:
        dist.send(tensor=tensor, dst=peer)
        dist.recv(tensor=received, src=peer)
    return received


def _their_meta(tensor, peer):
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    return decode_meta(theirs)


def checked_says_mismatch(tensor, peer):
    """Raises on both ranks, but the message names neither shape nor dtype."""
    shape, dtype = _their_meta(tensor, peer)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError("checked_exchange: shape or dtype mismatch")
    return batched_receive_first(tensor, peer)


def checked_torch_size(tensor, peer):
    """Correct: other words, torch.Size and dtypes as torch prints them."""
    shape, dtype = _their_meta(tensor, peer)
    if torch.Size(shape) != tensor.shape or dtype != tensor.dtype:
        raise ValueError(f"cannot exchange with rank {peer}: local tensor is "
                         f"{tensor.shape}/{tensor.dtype}, remote is {torch.Size(shape)}/{dtype}")
    return batched_receive_first(tensor, peer)
