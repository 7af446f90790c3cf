"""Second red team (lessons 01-04, 07-09): patterns.py rotate_kv bodies."""
import torch
import torch.distributed as dist

_KV = {}


def rotate_double_buffered(k, v):
    """WRONG by the contract ('into NEW tensors'): k_next, v_next come from two buffer
    pairs kept per (shapes, dtypes), used in turn (ring attention's double buffering moved
    inside rotate_kv): a caller that keeps an earlier k_next sees it overwritten."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    key = (tuple(k.shape), k.dtype, tuple(v.shape), v.dtype)
    entry = _KV.setdefault(key, [(torch.empty_like(k), torch.empty_like(v)),
                                 (torch.empty_like(k), torch.empty_like(v)), 0])
    k_next, v_next = entry[entry[2]]
    entry[2] ^= 1
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


def rotate_explicit_group_tuple(k, v):
    """RIGHT: group=None and distinct tags passed explicitly, buffers from new_empty,
    works returned as a tuple."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    k_next, v_next = k.new_empty(k.shape), v.new_empty(v.shape)
    ops = [dist.P2POp(dist.irecv, k_next, prev, None, 11),
           dist.P2POp(dist.irecv, v_next, prev, None, 12),
           dist.P2POp(dist.isend, k, nxt, None, 11),
           dist.P2POp(dist.isend, v, nxt, None, 12)]
    return k_next, v_next, tuple(dist.batch_isend_irecv(ops))
