"""Red-team G bodies for lesson 09 (labs/patterns.py)."""
import torch
import torch.distributed as dist


def _exchange_float32_wire(to_send, peer):
    wire = torch.float32 if to_send.is_floating_point() else to_send.dtype
    out = to_send.detach().to(wire).contiguous()
    got = torch.empty(to_send.shape, dtype=wire)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                     dist.P2POp(dist.irecv, got, peer)]):
        w.wait()
    return got.to(to_send.dtype) if wire != to_send.dtype else got


def fwd_float32_wire(output, next_rank):
    """WRONG: floating activations always travel as float32 ('gloo and bfloat16 do not
    mix'): a float64 activation loses precision on the way, a bfloat16 one doubles its
    bytes; the received value is cast back."""
    return _exchange_float32_wire(output, next_rank)


def _exchange_flat(to_send, peer):
    flat_out = to_send.detach().reshape(-1).contiguous()
    flat_in = torch.empty(to_send.numel(), dtype=to_send.dtype)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, flat_in, peer),
                                   dist.P2POp(dist.isend, flat_out, peer)])
    for r in reqs:
        r.wait()
    return flat_in.view(to_send.shape)


def fwd_flat_wire(output, next_rank):
    """RIGHT: both messages flattened to 1-D (reshape: a copy only when not contiguous),
    the receive listed first, the result a view of a new 1-D buffer in the right shape."""
    return _exchange_flat(output, next_rank)

