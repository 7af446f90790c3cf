"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_b.py.)
"""

import torch
import torch.distributed as dist



def _wait(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


# -- lesson 07: collectives -------------------------------------------------------------------

# WRONG: receives from every peer into a temporary shaped like inputs[rank] (this rank's own
# slot), not like outputs[peer]: breaks when sizes differ per peer.
def a2a_recv_sized_by_own_slot(outputs, inputs):
    rank, ws = dist.get_rank(), dist.get_world_size()
    temps = {p: torch.empty_like(inputs[rank]) for p in range(ws) if p != rank}
    ops = [op for p in temps for op in (dist.P2POp(dist.isend, inputs[p], p),
                                        dist.P2POp(dist.irecv, temps[p], p))]
    _wait(ops)
    outputs[rank].copy_(inputs[rank])
    for p, t in temps.items():
        outputs[p].copy_(t)
    return outputs


# WRONG: "compresses" float64 to float32 on the wire (broadcast loses bits); the grader runs no
# float64 case.
def bcast_float64_narrowed(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    wide = tensor.dtype == torch.float64
    if rank == src:
        wire = tensor.float() if wide else tensor
        _wait([dist.P2POp(dist.isend, wire, peer) for peer in range(ws) if peer != src])
    else:
        buf = torch.empty(tensor.shape, dtype=torch.float32) if wide else tensor
        _wait([dist.P2POp(dist.irecv, buf, src)])
        if wide:
            tensor.copy_(buf)
    return tensor


# WRONG: all_gather that sends integer tensors of 4 bytes or less widened to int64 (never run:
# int32/int16/int8 are not graded).
def all_gather_small_ints_widened(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    widen = tensor.dtype in (torch.int32, torch.int16, torch.int8)
    wire = [torch.empty(tensor.shape, dtype=torch.int64 if widen else tensor.dtype)
            for _ in range(ws)]
    wire[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for s in range(ws - 1):
        _wait([dist.P2POp(dist.isend, wire[(rank - s) % ws], nxt),
               dist.P2POp(dist.irecv, wire[(rank - s - 1) % ws], prv)])
    return [w.to(tensor.dtype) for w in wire]
