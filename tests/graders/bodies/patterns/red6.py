"""Red team H: patterns bodies."""
import torch
import torch.distributed as dist

_MEMO = {}


def _exchange_memo(tensor, peer, side):
    """One batch (send the data, receive the same shape); if this rank's tensor repeats the
    one it sent last time on this side, hand back last time's received tensor (a copy)."""
    out = tensor.contiguous()
    buf = torch.empty(tensor.shape, dtype=tensor.dtype)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                     dist.P2POp(dist.irecv, buf, peer)]):
        w.wait()
    key = (side, peer, tuple(tensor.shape), tensor.dtype)
    last = _MEMO.get(key)
    if last is not None and torch.equal(last[0], out):
        result = last[1].clone()
    else:
        result = buf
    _MEMO[key] = (out.clone(), result.clone())
    return result


def fwd_memo_by_own_output(output, next_rank):
    """WRONG (state between calls): the exchange as the hint says, always (so the sent
    bytes are the reference's, first call and repeat), but if this stage's output repeats
    the previous one it returns the gradient received LAST time ("same activation, same
    gradient"), not the one that just arrived. Stale as soon as the neighbour's changed;
    the repeat changes even ranks only and only its sends are compared."""
    return _exchange_memo(output, next_rank, "fwd")


def fwd_receive_first_detached_clone(output, next_rank):
    """RIGHT: receive listed first, the send of output.detach().clone(memory_format=
    torch.contiguous_format) (the same bytes as .contiguous(), a copy of its own), result
    allocated with new_empty then returned as is."""
    out = output.detach().clone(memory_format=torch.contiguous_format)
    buf = output.new_empty(output.shape)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, next_rank),
                                     dist.P2POp(dist.isend, out, next_rank)]):
        w.wait()
    return buf

