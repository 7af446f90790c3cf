"""Probe bodies for lesson 04 (exchange_batched, exchange_parity_ordered, checked_exchange)."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta


def _wait(works):
    for w in works:
        w.wait()


# ---------------------------------------------------------------- WRONG
def batched_rank_xor(tensor, peer):
    """WRONG: ignores `peer`, exchanges with rank ^ 1."""
    peer = dist.get_rank() ^ 1
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out


def batched_flat_float(tensor, peer):
    """WRONG: the exchange through a flattened float64 copy (widened on the wire)."""
    mine = tensor.reshape(-1).to(torch.float64)
    out = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out.to(tensor.dtype).reshape(tensor.shape)


def parity_isend_wait(tensor, peer):
    """WRONG: parity order, but with isend(...).wait() / irecv(...).wait()."""
    out = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 0:
        dist.isend(tensor, peer).wait()
        dist.irecv(out, peer).wait()
    else:
        dist.irecv(out, peer).wait()
        dist.isend(tensor, peer).wait()
    return out


def parity_odd_sends_first(tensor, peer):
    """WRONG: the parity reversed (odd sends first). Never deadlocks, not what is asked."""
    out = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 1:
        dist.send(tensor, peer)
        dist.recv(out, peer)
    else:
        dist.recv(out, peer)
        dist.send(tensor, peer)
    return out


def checked_numel_dtype_only(tensor, peer):
    """WRONG: compares numel and dtype (a (2, 3) and a (3, 2) exchange silently)."""
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if torch.Size(shape).numel() != tensor.numel() or dtype != tensor.dtype:
        raise ValueError(f"mine {tuple(tensor.shape)} {tensor.dtype}, peer {shape} {dtype}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out


def checked_swapped_message(tensor, peer):
    """WRONG: right check, but the message swaps the sides: it says this rank has the
    peer's shape/dtype and the peer has ours (misleading)."""
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has {shape} {dtype} but "
                         f"peer {peer} has {tuple(tensor.shape)} {tensor.dtype}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out


def checked_only_larger_raises(tensor, peer):
    """WRONG: only the rank whose tensor is 'wrong' (the odd one) raises; the even one
    returns its peer's tensor truncated/padded... here: it returns zeros."""
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        if dist.get_rank() % 2:
            raise ValueError(f"{tuple(tensor.shape)} {tensor.dtype} vs {shape} {dtype}")
        return torch.zeros_like(tensor)
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out


# ---------------------------------------------------------------- RIGHT
def parity_by_peer(tensor, peer):
    """RIGHT: the order from the PEER's parity (an odd peer means I am even: send first)."""
    out = tensor.new_empty(tensor.shape)
    if peer & 1:
        dist.send(tensor=tensor, dst=peer)
        dist.recv(tensor=out, src=peer)
    else:
        dist.recv(tensor=out, src=peer)
        dist.send(tensor=tensor, dst=peer)
    return out


def checked_reuses_batched(tensor, peer):
    """RIGHT: the metadata through a one-batch exchange helper, compared with torch.equal,
    the message through decode_meta on both sides."""
    def swap(t):
        got = torch.empty_like(t)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, peer),
                                      dist.P2POp(dist.isend, t, peer)]))
        return got
    mine = encode_meta(tensor)
    theirs = swap(mine)
    if not torch.equal(mine, theirs):
        (s1, d1), (s2, d2) = decode_meta(mine), decode_meta(theirs)
        raise ValueError(f"shape/dtype mismatch: here {list(s1)} {d1}; "
                         f"on rank {peer} {list(s2)} {d2}")
    return swap(tensor)


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
