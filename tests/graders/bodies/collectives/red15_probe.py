"""Round 15 (ours): bodies for the exercises the catalogue held least of (lessons 02, 04, 07
and 10), in kinds no list named: another algorithm than the one the exercise asks for (a
chain, a two-way ring, a relay for some k), a result that replaces the caller's memory
instead of filling it, sizes sent in another dtype of the same width, requests waited on one
side only, the own slot handed back as the input itself, one batch per peer where the
contract says one.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_probe.py.)
"""
import torch
import torch.distributed as dist



def _run(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


# ---- lesson 07: p2p_broadcast -----------------------------------------------------------

# WRONG: one batch per destination on src, each waited before the next (the contract: ONE
# batch; gloo's sends then wait for each receiver in turn).
def broadcast_batch_per_peer(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for peer in range(ws):
            if peer != src:
                _run([dist.P2POp(dist.isend, tensor, peer)])
    else:
        incoming = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.copy_(incoming)
    return tensor


# WRONG: the receivers swap in new memory (tensor.data = ...): a view of the caller's
# tensor (a bucket of a flat buffer) never sees the broadcast value.
def broadcast_swaps_storage(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src])
    else:
        incoming = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.data = incoming
    return tensor


# WRONG: src sends a float64 copy, the receivers receive float64 and narrow ("more precise").
def broadcast_widened(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    wide = torch.float64 if tensor.is_floating_point() else tensor.dtype
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor.to(wide), p) for p in range(ws) if p != src])
    else:
        incoming = torch.empty(tensor.shape, dtype=wide)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.copy_(incoming)
    return tensor


# WRONG: src posts its sends and returns without waiting ("the receivers wait for them").
def broadcast_src_never_waits(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    ops = ([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src] if rank == src
           else [dist.P2POp(dist.irecv, tensor, src)])
    if ops:
        works = dist.batch_isend_irecv(ops)
        if rank != src:
            for w in works:
                w.wait()
    return tensor


# WRONG: a chain (src -> src+1 -> src+2 ...), every rank receives once and sends once.
def broadcast_chain_of_batches(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % ws
    if v:
        _run([dist.P2POp(dist.irecv, tensor, (rank - 1) % ws)])
    if v + 1 < ws:
        _run([dist.P2POp(dist.isend, tensor, (rank + 1) % ws)])
    return tensor


# ---- lesson 07: p2p_gather / p2p_all_gather ---------------------------------------------

# WRONG: the ranks that are not dst return their own tensor instead of None.
def gather_returns_own_elsewhere(tensor, dst):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return tensor
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return out


# WRONG: a bidirectional ring: each step sends to both neighbours, half the steps.
def all_gather_both_ways(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    right_steps, left_steps = ws // 2, (ws - 1) // 2     # slots from the left, from the right
    for step in range(max(right_steps, left_steps)):
        ops = []
        if step < right_steps:
            ops += [dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
                    dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)]
        if step < left_steps:
            ops += [dist.P2POp(dist.isend, out[(rank + step) % ws], prv),
                    dist.P2POp(dist.irecv, out[(rank + step + 1) % ws], nxt)]
        _run(ops)
    return out


# WRONG: the own slot is the input itself (the docstring: a copy).
def all_gather_own_slot_is_input(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank] = tensor
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for step in range(ws - 1):
        _run([dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)])
    return out


# WRONG: all_to_all in one batch per peer (the docstring: ONE batch for the whole exchange).
def all_to_all_batch_per_peer(outputs, inputs):
    rank, ws = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    for peer in range(ws):
        if peer != rank:
            _run([dist.P2POp(dist.isend, inputs[peer], peer),
                  dist.P2POp(dist.irecv, outputs[peer], peer)])
    return outputs
