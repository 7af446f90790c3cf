"""Twelfth round, a late red team: lessons 05-07, 09, 10. Each body's docstring starts
with WRONG (...) or RIGHT: and says why in two lines.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_late.py.)
"""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below
from labs.ring import chunk_bounds


def _swap(send, nxt, recv, prev):
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, nxt),
                                        dist.P2POp(dist.irecv, recv, prev)]):
        work.wait()


def halving_gather_via_scratch(tensor):
    """RIGHT: the reference halving-doubling, but each all-gather step receives the partner's
    half into a fresh buffer and copies it into place after the wait (not straight in place)."""
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
                incoming = torch.empty(chunks(*keep).numel(), dtype=flat.dtype)
                _swap(chunks(*give), rank ^ mask, incoming, rank ^ mask)
                chunks(*keep).add_(incoming)
                steps.append((rank ^ mask, keep, give))
                lo, hi = keep
                mask //= 2
            for peer, keep, give in reversed(steps):
                incoming = torch.empty(chunks(*give).numel(), dtype=flat.dtype)
                _swap(chunks(*keep), peer, incoming, peer)
                chunks(*give).copy_(incoming)
        fold_out(flat)
    return tensor


# -- lesson 06, state ------------------------------------------------------------------------

