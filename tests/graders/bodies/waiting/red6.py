"""Red team I: lesson 03 bodies."""
import torch
import torch.distributed as dist

_spare = {}


def safe_ring_shift_reuses_last_input(tensor):
    """WRONG: keeps the caller's `tensor` of the last call and receives the next call's data
    into it ("its send is over, so the buffer is free"): the caller's tensor of call N
    changes during call N+1. The contract: the caller may reuse `tensor` as soon as the
    function returns (it is the caller's, not a scratch buffer)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    key = (tuple(tensor.shape), tensor.dtype)
    scratch = _spare.pop(key, None)
    if scratch is None or scratch.data_ptr() == tensor.data_ptr():
        scratch = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, tensor, (rank + 1) % ws),
        dist.P2POp(dist.irecv, scratch, (rank - 1) % ws),
    ])
    for w in works:
        w.wait()
    _spare[key] = tensor          # the caller's tensor: next call's receive buffer
    return scratch.clone()


def overlapped_step_storage_escape(block, weight, recv_buf):
    """WRONG: a token product in flight (one row, seen by the grader), the real product only
    after both waits, computed on a plain tensor built on the weight's storage (the watcher
    never sees it): no overlap at all."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    works = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, block, (rank + 1) % ws),
        dist.P2POp(dist.irecv, recv_buf, (rank - 1) % ws),
    ])
    _ = block[:1] @ weight
    for w in works:
        w.wait()
    plain = torch.empty(0, dtype=weight.dtype)
    plain.set_(weight.untyped_storage(), weight.storage_offset(), weight.shape, weight.stride())
    return block @ plain


def overlapped_step_matmul_out(block, weight, recv_buf):
    """RIGHT: isend/irecv, then torch.matmul(block, weight, out=...) into a buffer of its
    own while they fly, then wait (recv first)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    r = dist.irecv(recv_buf, src=(rank - 1) % ws)
    s = dist.isend(block, dst=(rank + 1) % ws)
    out = torch.empty(block.shape[0], weight.shape[1], dtype=block.dtype)
    torch.matmul(block, weight, out=out)
    r.wait()
    s.wait()
    return out
