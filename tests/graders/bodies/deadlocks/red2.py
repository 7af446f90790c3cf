"""Second red team (lessons 01-04, 07-09): deadlocks.py bodies."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta

_PAIRS = {}


def batched_double_buffered(tensor, peer):
    """WRONG: receives into one of two buffers kept per (shape, dtype), used in turn."""
    key = (tuple(tensor.shape), tensor.dtype)
    entry = _PAIRS.setdefault(key, [torch.empty_like(tensor), torch.empty_like(tensor), 0])
    out = entry[entry[2]]
    entry[2] ^= 1
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                     dist.P2POp(dist.irecv, out, peer)]):
        w.wait()
    return out


def checked_meta_blocking_then_batched(tensor, peer):
    """RIGHT: the metadata by parity-ordered blocking send/recv, compared with torch.equal;
    the data in one batch, into torch.empty(shape, dtype=...) from the decoded metadata."""
    mine = encode_meta(tensor)
    theirs = torch.zeros_like(mine)
    if dist.get_rank() % 2 == 0:
        dist.send(mine, peer)
        dist.recv(theirs, peer)
    else:
        dist.recv(theirs, peer)
        dist.send(mine, peer)
    if not torch.equal(mine, theirs):
        shape, dtype = decode_meta(theirs)
        raise ValueError(f"mismatch: mine is {list(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer}'s is {list(shape)} {dtype}")
    shape, dtype = decode_meta(theirs)
    out = torch.empty(shape, dtype=dtype)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer),
                                     dist.P2POp(dist.isend, tensor, peer)]):
        w.wait()
    return out
