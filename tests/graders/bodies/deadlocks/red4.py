"""Fourth red team (lesson 04, labs/deadlocks.py): checked exchanges."""
import torch
import torch.distributed as dist
from labs.deadlocks import decode_meta, encode_meta


def _meta(tensor, peer):
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                     dist.P2POp(dist.irecv, theirs, peer)]):
        w.wait()
    return decode_meta(theirs)


def _raise(tensor, peer, shape, dtype):
    raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype}, "
                     f"peer {peer} has {tuple(shape)} {dtype}")


# WRONG: the data itself by blocking send-then-recv on both ranks (the lesson-04 deadlock)
def checked_blocking_data(tensor, peer):
    shape, dtype = _meta(tensor, peer)
    if tuple(shape) != tuple(tensor.shape) or dtype != tensor.dtype:
        _raise(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    dist.send(tensor, peer)
    dist.recv(out, peer)
    return out


# WRONG: compares shape and element size, not the dtype (int64 vs float64 goes through)
def checked_itemsize(tensor, peer):
    shape, dtype = _meta(tensor, peer)
    their_size = torch.empty(0, dtype=dtype).element_size()
    if tuple(shape) != tuple(tensor.shape) or their_size != tensor.element_size():
        _raise(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                     dist.P2POp(dist.irecv, out, peer)]):
        w.wait()
    return out


# WRONG: compares numel and dtype and ndim, and sorted sizes (a "permutation is fine" mistake)
def checked_sorted_shape(tensor, peer):
    shape, dtype = _meta(tensor, peer)
    if sorted(shape) != sorted(tensor.shape) or dtype != tensor.dtype:
        _raise(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                     dist.P2POp(dist.irecv, out, peer)]):
        w.wait()
    return out


# RIGHT: meta and data both parity-ordered blocking (a send always meets a recv)
def checked_parity(tensor, peer):
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)

    def swap(a, b):
        if dist.get_rank() % 2 == 0:
            dist.send(a, dst=peer)
            dist.recv(b, src=peer)
        else:
            dist.recv(b, src=peer)
            dist.send(a, dst=peer)

    swap(mine, theirs)
    shape, dtype = decode_meta(theirs)
    if torch.Size(shape) != tensor.shape or dtype is not tensor.dtype:
        raise ValueError(f"mismatch: mine {list(tensor.shape)} {tensor.dtype}; "
                         f"theirs {list(shape)} {dtype}")
    out = torch.empty_like(tensor)
    swap(tensor, out)
    return out


# WRONG: data sent ungrouped isend-then-irecv on both sides (notebook's NCCL hazard), meta batched
def checked_ungrouped_data(tensor, peer):
    shape, dtype = _meta(tensor, peer)
    if tuple(shape) != tuple(tensor.shape) or dtype != tensor.dtype:
        _raise(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    ws = [dist.isend(tensor, peer), dist.irecv(out, peer)]
    for w in ws:
        w.wait()
    return out


# exchange_batched WRONG: two P2POps but waits only the last Work (gloo: one per op)
def batched_wait_last(tensor, peer):
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, out, peer)])
    works[-1].wait()
    return out


# exchange_parity_ordered WRONG: parity of the peer (peer odd -> I send first); with the graded
# pairings (always opposite parity) it is the rank's parity.
def parity_by_peer(tensor, peer):
    out = torch.empty_like(tensor)
    if peer % 2 == 1:
        dist.send(tensor, dst=peer)
        dist.recv(out, src=peer)
    else:
        dist.recv(out, src=peer)
        dist.send(tensor, dst=peer)
    return out
