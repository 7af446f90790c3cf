"""Reference solutions for lesson 04 (labs/deadlocks.py)."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta


def exchange_batched(tensor, peer):
    """Both ops in one batch: gloo posts them both before anyone waits."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    for work in works:
        work.wait()
    return received


def exchange_parity_ordered(tensor, peer):
    """Even ranks send then receive, odd ranks receive then send: a send always meets a recv."""
    received = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 0:
        dist.send(tensor, dst=peer)
        dist.recv(received, src=peer)
    else:
        dist.recv(received, src=peer)
        dist.send(tensor, dst=peer)
    return received


def checked_exchange(tensor, peer):
    """Exchange fixed-size metadata first; both ranks compare and raise together."""
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                        dist.P2POp(dist.irecv, theirs, peer)]):
        work.wait()
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has {tuple(tensor.shape)} "
                         f"{tensor.dtype} but peer {peer} has {shape} {dtype}")
    return exchange_batched(tensor, peer)
