"""Red team, round 12 (b): ring, gradients, collectives, patterns and algorithms bodies.

New kinds: encodings that are the identity on a constant tensor (the sums probe holds
2**rank everywhere, so a message [x0, x1 - x0, ...] or a permuted chunk looks like the
partial sums), receive buffers sized by the caller's own slot (the grader's all_to_all has
the same size for every peer), a dtype the collectives grader never runs, and correct
bodies in other styles (another chunk owner, strided chunks, a send thread, balanced
segments, torch.stack(...).sum, .grad as views of the reduced buffer).

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_b.py.)
"""

import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below, scratch
from labs.ring import chunk_bounds
from tests.graders.bodies._shared import delta as _delta, undelta as _undelta


def _wait(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


# -- lesson 10: algorithms --------------------------------------------------------------------

# WRONG: recursive doubling whose whole-tensor messages are delta-encoded (each rank first
# rounds its own copy the same way, so both partners keep equal bits).
def rd_delta_encoded(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            rank, q = dist.get_rank(), power_of_two_below(p)
            incoming = scratch(flat.numel(), flat.dtype)
            mask = 1
            while mask < q:
                wire = _delta(flat)
                flat.copy_(_undelta(wire))
                _wait([dist.P2POp(dist.isend, wire, rank ^ mask),
                       dist.P2POp(dist.irecv, incoming, rank ^ mask)])
                flat.add_(_undelta(incoming))
                mask <<= 1
        fold_out(flat)
    return tensor


# WRONG: tree_broadcast that forwards to its children from a float32 copy when the tensor is
# float16 (wire dtype widened; no float16 case graded).
def tree_bcast_half_widened(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    half = tensor.dtype == torch.float16
    wire = tensor.float() if half else tensor
    if v:
        parent = v - (1 << (v.bit_length() - 1))
        dist.recv(wire, (parent + src) % p)
        if half:
            tensor.copy_(wire)
    mask = 1 << v.bit_length()
    while v + mask < p:
        dist.send(wire, (v + mask + src) % p)
        mask <<= 1
    return tensor


# WRONG: halving-doubling whose all-gather sends the kept half reversed (a permutation: the
# subsets check only sees constants).
def hd_flipped_allgather(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            rank, q = dist.get_rank(), power_of_two_below(p)
            bounds = chunk_bounds(flat.numel(), q)

            def chunks(lo, hi):
                return flat[bounds[lo][0]:bounds[hi - 1][1]]
            lo, hi, mask, steps = 0, q, q // 2, []
            while mask:
                mid = (lo + hi) // 2
                keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
                mine = chunks(*keep)
                incoming = scratch(mine.numel(), flat.dtype)
                _wait([dist.P2POp(dist.isend, chunks(*give), rank ^ mask),
                       dist.P2POp(dist.irecv, incoming, rank ^ mask)])
                mine.add_(incoming)
                steps.append((rank ^ mask, keep, give))
                lo, hi = keep
                mask //= 2
            for peer, keep, give in reversed(steps):
                into = chunks(*give)
                buf = torch.empty(into.numel(), dtype=flat.dtype)
                _wait([dist.P2POp(dist.isend, chunks(*keep).flip(0).contiguous(), peer),
                       dist.P2POp(dist.irecv, buf, peer)])
                into.copy_(buf.flip(0))
        fold_out(flat)
    return tensor
