"""Red-team bodies for lesson 04 (exchange_batched, exchange_parity_ordered, checked_exchange), as they were
written; listed in tests/harness/catalogue/."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta


def _wait(works):
    for w in works:
        w.wait()


# ---------------------------------------------------------------- WRONG


# ---------------------------------------------------------------- RIGHT


def checked_rank_xor(tensor, peer):
    """WRONG: ignores `peer` and always exchanges with rank ^ 1 (the learner's pairs)."""
    peer = dist.get_rank() ^ 1
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has {tuple(tensor.shape)} "
                         f"{tensor.dtype} but peer {peer} has {shape} {dtype}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out
