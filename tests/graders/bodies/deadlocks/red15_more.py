"""Round 15 (ours), part 2: lessons 04, 06 and 09, in kinds no list named (every dtype in
one float64 ring, DDP's first bucket, buckets in forward order, k and v in one message,
shapes compared by numel), and right bodies in styles the contracts allow.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_more.py.)
"""
import torch
import torch.distributed as dist



def _wait(works):
    for w in works:
        w.wait()


# ---- lesson 04 ------------------------------------------------------------------------

# WRONG: shapes compared by numel only ((2, 3) against (3, 2) goes through).
def checked_numel_only(tensor, peer):
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if torch.Size(shape).numel() != tensor.numel() or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    received = torch.empty(shape, dtype=dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received.view(tensor.shape)


# RIGHT: the metadata exchanged with blocking calls in parity order, the data in one batch.
def checked_meta_by_parity(tensor, peer):
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    if dist.get_rank() % 2 == 0:
        dist.send(mine, peer)
        dist.recv(theirs, peer)
    else:
        dist.recv(theirs, peer)
        dist.send(mine, peer)
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received
