"""Lesson 07 (p2p_broadcast, p2p_gather, p2p_all_gather, p2p_all_to_all): wrong bodies, and
correct ones in another style (binomial trees, a receive-first ring)."""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_all_to_all = copies.collectives.p2p_all_to_all
reference_gather = copies.collectives.p2p_gather


def _run(ops):
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()


# ---- p2p_broadcast --------------------------------------------------------------------------

def broadcast_builtin(tensor, src):
    dist.broadcast(tensor, src)
    return tensor


def broadcast_tree(tensor, src):
    """Right values, another method: a binomial tree (lesson 10), not lesson 07's star."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    me, step = (rank - src) % ws, 1
    while step < ws:
        if me < step and me + step < ws:
            _run([dist.P2POp(dist.isend, tensor, (me + step + src) % ws)])
        elif step <= me < 2 * step:
            _run([dist.P2POp(dist.irecv, tensor, (me - step + src) % ws)])
        step *= 2
    return tensor


# ---- p2p_gather -----------------------------------------------------------------------------

def gather_builtin(tensor, dst):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)] if rank == dst else None
    dist.gather(tensor, out, dst=dst)
    return out


def gather_aliases_input(tensor, dst):
    """Right values, but its own slot on dst is the caller's tensor, not a copy."""
    out = reference_gather(tensor, dst)
    if out is not None:
        out[dst] = tensor
    return out


def gather_tree(tensor, dst):
    """Right values, another method: a binomial tree, each rank forwarding the block it
    collected, not lesson 07's star."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    me, step = (rank - dst) % ws, 1
    held = [tensor.clone()]                 # ranks me, me+1, ... (renumbered), in order
    while step < ws:
        if me % (2 * step) == step:         # send what I hold to me - step, then stop
            block = torch.stack(held)
            _run([dist.P2POp(dist.isend, block, (me - step + dst) % ws)])
            return None
        if me % (2 * step) == 0 and me + step < ws:
            count = min(step, ws - me - step)
            block = torch.empty((count, *tensor.shape), dtype=tensor.dtype)
            _run([dist.P2POp(dist.irecv, block, (me + step + dst) % ws)])
            held += list(block.unbind(0))
        step *= 2
    return [held[(r - dst) % ws].clone() for r in range(ws)]


# ---- p2p_all_gather -------------------------------------------------------------------------

def all_gather_builtin(tensor):
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return out


def all_gather_star(tensor):
    """Right values: everyone sends to everyone in one batch. A star, not the ring."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [tensor.clone() if r == rank else torch.empty_like(tensor) for r in range(ws)]
    _run([op for peer in range(ws) if peer != rank
          for op in (dist.P2POp(dist.isend, tensor, peer), dist.P2POp(dist.irecv, out[peer], peer))])
    return out


def all_gather_aliases_at_one_rank(tensor):
    """Right values, but with one rank its list holds the caller's tensor itself."""
    if dist.get_world_size() == 1:
        return [tensor]
    return all_gather_ring_receive_first(tensor)


def all_gather_ring_receive_first(tensor):
    """Correct: the ring, receive listed first, forwarding the slot that just arrived."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [None] * ws
    out[rank] = tensor.clone()
    last = rank
    for _ in range(ws - 1):
        incoming = (last - 1) % ws
        out[incoming] = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, out[incoming], (rank - 1) % ws),
              dist.P2POp(dist.isend, out[last], (rank + 1) % ws)])
        last = incoming
    return out


# ---- p2p_all_to_all -------------------------------------------------------------------------

def all_to_all_builtin(outputs, inputs):
    """Right values from dist.all_to_all_single."""
    out = torch.cat(outputs)
    dist.all_to_all_single(out, torch.cat(inputs), [len(t) for t in outputs],
                           [len(t) for t in inputs])
    for slot, part in zip(outputs, out.split([len(t) for t in outputs])):
        slot.copy_(part)
    return outputs


def all_to_all_replaces_entries(outputs, inputs):
    """Right values in the returned list, received into NEW tensors put in the list: the
    caller's own output tensors are never filled."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    fresh = [inputs[rank].clone() if p == rank else torch.empty_like(outputs[p])
             for p in range(ws)]
    _run([op for p in range(ws) if p != rank
          for op in (dist.P2POp(dist.isend, inputs[p], p), dist.P2POp(dist.irecv, fresh[p], p))])
    outputs[:] = fresh
    return outputs


def all_to_all_aliases_input(outputs, inputs):
    """Right values, but its own slot becomes the caller's input tensor."""
    reference_all_to_all(outputs, inputs)
    outputs[dist.get_rank()] = inputs[dist.get_rank()]
    return outputs


def all_to_all_receives_first(outputs, inputs):
    """Correct: receives first, the own slot copied after the exchange."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    _run([dist.P2POp(dist.irecv, outputs[p], p) for p in peers]
         + [dist.P2POp(dist.isend, inputs[p], p) for p in peers])
    outputs[rank].copy_(inputs[rank])
    return outputs
