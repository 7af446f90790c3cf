"""Probe bodies for lesson 09 (neighbour exchange, rotate_kv)."""
import torch
import torch.distributed as dist


def _ring():
    r, n = dist.get_rank(), dist.get_world_size()
    return (r + 1) % n, (r - 1) % n


# ---------------------------------------------------------------- WRONG
def rotate_v_like_k(k, v):
    """WRONG: copy-paste slip: v_next = torch.empty_like(k) (wrong when v's shape or dtype
    differs from k's, e.g. another head dim for values)."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(k)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


_POOL = {}


def rotate_double_buffered(k, v):
    """WRONG (contract): two buffer pairs per shape kept across calls and handed out in
    turn: NOT new tensors; a k_next from two calls ago is overwritten."""
    key = (tuple(k.shape), k.dtype, tuple(v.shape), v.dtype)
    pool = _POOL.setdefault(key, {"i": 0, "bufs": [(torch.empty_like(k), torch.empty_like(v)),
                                                   (torch.empty_like(k), torch.empty_like(v))]})
    k_next, v_next = pool["bufs"][pool["i"] % 2]
    pool["i"] += 1
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


def rotate_kv_one_message(k, v):
    """WRONG: k and v concatenated into one message each way (2 ops, not 4)."""
    nxt, prev = _ring()
    both = torch.cat([k.reshape(-1), v.reshape(-1)])
    got = torch.empty_like(both)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, both, nxt),
                                    dist.P2POp(dist.irecv, got, prev)])
    k_next, v_next = got[:k.numel()].view_as(k), got[k.numel():].view_as(v)
    return k_next, v_next, works


def fwd_float_wire(output, next_rank):
    """WRONG: the activation sent as float32 whatever its dtype (int64 values > 2**24 and
    float64 lose bits)."""
    got = torch.empty_like(output, dtype=torch.float32)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, output.float(), next_rank),
                                     dist.P2POp(dist.irecv, got, next_rank)]):
        w.wait()
    return got.to(output.dtype)


def bwd_float_wire(input_grad, prev_rank):
    return fwd_float_wire(input_grad, prev_rank)


def fwd_returns_view_of_sent(output, next_rank):
    """WRONG: receives into a fresh buffer, but returns it with the autograd history of
    `output` attached: `got + 0 * output` (no new tensor semantics broken? values fine)."""
    got = torch.empty_like(output)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, output, next_rank),
                                     dist.P2POp(dist.irecv, got, next_rank)]):
        w.wait()
    return got


# ---------------------------------------------------------------- RIGHT
def fwd_blocking_by_role(output, next_rank):
    """RIGHT: blocking, ordered by role: the forward side sends first ..."""
    got = torch.empty_like(output)
    dist.send(output.detach().contiguous(), next_rank)
    dist.recv(got, next_rank)
    return got


def bwd_blocking_by_role(input_grad, prev_rank):
    """... and the backward side receives first: a send always meets a receive."""
    got = torch.empty_like(input_grad)
    dist.recv(got, prev_rank)
    dist.send(input_grad.detach().contiguous(), prev_rank)
    return got


def rotate_interleaved(k, v):
    """RIGHT: send k, recv k, send v, recv v (per-tensor order kept), a tuple of works."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    ops = [dist.P2POp(dist.isend, k, nxt), dist.P2POp(dist.irecv, k_next, prev),
           dist.P2POp(dist.isend, v, nxt), dist.P2POp(dist.irecv, v_next, prev)]
    return k_next, v_next, tuple(dist.batch_isend_irecv(ops))
