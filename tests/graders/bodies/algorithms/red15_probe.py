"""Round 15 (ours): bodies for the exercises the catalogue held least of (lessons 02, 04, 07
and 10), in kinds no list named: another algorithm than the one the exercise asks for (a
chain, a two-way ring, a relay for some k), a result that replaces the caller's memory
instead of filling it, sizes sent in another dtype of the same width, requests waited on one
side only, the own slot handed back as the input itself, one batch per peer where the
contract says one.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_probe.py.)
"""
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below, scratch
from labs.ring import chunk_bounds


def _run(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


def _exchange(send, peer, recv):
    _run([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)])


# ---- lesson 10 ------------------------------------------------------------------------

def _hd(flat, rank, q, masks):
    bounds = chunk_bounds(flat.numel(), q)

    def chunks(lo, hi):
        return flat[bounds[lo][0]:bounds[hi - 1][1]]

    lo, hi, steps = 0, q, []
    for mask in masks:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
        mine = chunks(*keep)
        incoming = scratch(mine.numel(), flat.dtype)
        _exchange(chunks(*give), rank ^ mask, incoming)
        mine.add_(incoming)
        steps.append((rank ^ mask, keep, give))
        lo, hi = keep
    for peer, keep, give in reversed(steps):
        _exchange(chunks(*keep), peer, chunks(*give))


# RIGHT: the halving with the nearest partner first (mask 1, 2, ... q/2), on chunk_bounds'
# chunks: the same algorithm, the chunks' owners renumbered (the docstring allows it).
def hd_nearest_first(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            q = power_of_two_below(p)
            _hd(flat, dist.get_rank(), q, [1 << i for i in range(q.bit_length() - 1)])
        fold_out(flat)
    return tensor


# WRONG: reduce-scatter by halving, then the all-gather as recursive doubling of the WHOLE
# tensor ("simpler"): the same partners, more bytes in the second half.
def hd_gather_whole(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            q, rank = power_of_two_below(p), dist.get_rank()
            bounds = chunk_bounds(flat.numel(), q)
            lo, hi, mask = 0, q, q // 2
            while mask:
                mid = (lo + hi) // 2
                keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
                mine = flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]]
                incoming = scratch(mine.numel(), flat.dtype)
                _exchange(flat[bounds[give[0]][0]:bounds[give[1] - 1][1]], rank ^ mask, incoming)
                mine.add_(incoming)
                lo, hi = keep
                mask //= 2
            own = flat[bounds[lo][0]:bounds[hi - 1][1]].clone()
            flat.zero_()
            flat[bounds[lo][0]:bounds[hi - 1][1]] = own
            mask = 1
            while mask < q:          # zeros elsewhere: adding whole tensors gathers them
                incoming = scratch(flat.numel(), flat.dtype)
                _exchange(flat, rank ^ mask, incoming)
                flat.add_(incoming)
                mask <<= 1
        fold_out(flat)
    return tensor
