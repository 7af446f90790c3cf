"""Reference solutions for lesson 10 (labs/algorithms.py)."""
import torch.distributed as dist

from labs.algorithms import (best_all_reduce, flat_view, fold_in, fold_out,  # noqa: F401
                             power_of_two_below, scratch)
from labs.ring import chunk_bounds

# best_all_reduce is not an exercise: it lives in labs/algorithms.py and is re-exported
# here, so `solutions.algorithms` offers both all-reduces the course's other checks use.


def _exchange(send, peer, recv):
    """One step: send `send` to `peer` and receive `recv` from it, in one batch."""
    ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()


def tree_broadcast(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        parent = v - (1 << (v.bit_length() - 1))      # v without its highest bit
        dist.recv(tensor, (parent + src) % p)
    mask = 1 << v.bit_length()                          # the smallest power of two > v
    while v + mask < p:
        dist.send(tensor, (v + mask + src) % p)
        mask <<= 1
    return tensor


def _all_reduce(tensor, exchange):
    """The frame both all-reduces share: nothing to do on one rank; otherwise the extra
    ranks fold in, the first q = power_of_two_below(p) ranks run `exchange(flat, rank, q)`,
    and the extra ranks get the result back."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            exchange(flat, dist.get_rank(), power_of_two_below(p))
        fold_out(flat)
    return tensor


def recursive_doubling_all_reduce(tensor):
    return _all_reduce(tensor, _doubling)


def _doubling(flat, rank, q):
    incoming = scratch(flat.numel(), flat.dtype)
    mask = 1
    while mask < q:
        _exchange(flat, rank ^ mask, incoming)
        flat.add_(incoming)            # a + b == b + a: both partners get the same bits
        mask <<= 1


def halving_doubling_all_reduce(tensor):
    return _all_reduce(tensor, _halving_doubling)


def _halving_doubling(flat, rank, q):
    bounds = chunk_bounds(flat.numel(), q)

    def chunks(lo, hi):                # chunks lo..hi-1 as one view of the tensor
        return flat[bounds[lo][0]:bounds[hi - 1][1]]

    lo, hi, mask, steps = 0, q, q // 2, []
    while mask:                        # reduce-scatter by recursive halving
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
        mine = chunks(*keep)
        incoming = scratch(mine.numel(), flat.dtype)
        _exchange(chunks(*give), rank ^ mask, incoming)
        mine.add_(incoming)
        steps.append((rank ^ mask, keep, give))
        lo, hi = keep
        mask //= 2
    for peer, keep, give in reversed(steps):   # all-gather by recursive doubling
        _exchange(chunks(*keep), peer, chunks(*give))
