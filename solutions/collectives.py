"""Reference solutions for labs/collectives.py (lesson 07)."""
import torch
import torch.distributed as dist


def _run(ops):
    """Post one batch and wait for all of it. No ops (one rank): nothing to post, and
    batch_isend_irecv([]) would raise IndexError."""
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


def p2p_broadcast(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        ops = [dist.P2POp(dist.isend, tensor, peer) for peer in range(ws) if peer != src]
    else:
        ops = [dist.P2POp(dist.irecv, tensor, src)]
    _run(ops)
    return tensor


def p2p_gather(tensor, dst):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[peer], peer) for peer in range(ws) if peer != dst])
    return out


def p2p_all_gather(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for step in range(ws - 1):
        # Forward what arrived in the previous step; receive into a different slot.
        _run([dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)])
    return out


def p2p_all_to_all(outputs, inputs):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if len(inputs) != ws or len(outputs) != ws:
        raise ValueError(f"p2p_all_to_all needs {ws} inputs and {ws} outputs, "
                         f"got {len(inputs)} and {len(outputs)}")
    outputs[rank].copy_(inputs[rank])
    ops = []
    for peer in range(ws):
        if peer != rank:
            ops.append(dist.P2POp(dist.isend, inputs[peer], peer))
            ops.append(dist.P2POp(dist.irecv, outputs[peer], peer))
    _run(ops)
    return outputs
