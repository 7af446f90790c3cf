"""Second red team (lesson 10, labs/algorithms.py): accumulators, halves, trees."""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below
from labs.ring import chunk_bounds


def _exchange(send, peer, recv):
    ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()


def doubling_wide_accumulator(tensor):
    """W: recursive doubling with a float64 running sum "for precision": each step sends
    the running sum cast to the tensor's dtype (right dtype on the wire) but adds what
    arrives into the float64 sum. The partners no longer hold the same bits: from 4 ranks
    on, ranks end with different results (bfloat16: visibly), not added in own dtype."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p == 1:
        return tensor
    if fold_in(flat):
        rank, q = dist.get_rank(), power_of_two_below(p)
        wide = flat.is_floating_point()
        acc = flat.double() if wide else flat
        incoming = torch.empty_like(flat)
        mask = 1
        while mask < q:
            out = acc.to(flat.dtype) if wide else flat
            _exchange(out, rank ^ mask, incoming)
            acc = acc + (incoming.double() if wide else incoming)
            if not wide:
                flat.copy_(acc)
                acc = flat
            mask <<= 1
        flat.copy_(acc)
    fold_out(flat)
    return tensor


def halving_wide_accumulator(tensor):
    """W (minor): halving-doubling whose kept range is summed in a float64 copy across the
    halving steps (cast for every message); not added in the tensor's own dtype."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p == 1:
        return tensor
    if fold_in(flat):
        rank, q = dist.get_rank(), power_of_two_below(p)
        bounds = chunk_bounds(flat.numel(), q)
        wide = flat.is_floating_point()
        acc = flat.double() if wide else flat.clone()

        def rng(lo, hi):
            return bounds[lo][0], bounds[hi - 1][1]
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            ka, kb = rng(*keep)
            ga, gb = rng(*give)
            out = acc[ga:gb].to(flat.dtype)
            incoming = torch.empty(kb - ka, dtype=flat.dtype)
            _exchange(out, rank ^ mask, incoming)
            acc[ka:kb] += incoming.to(acc.dtype)
            steps.append((rank ^ mask, keep, give))
            lo, hi = keep
            mask //= 2
        a, b = rng(lo, hi)
        flat[a:b].copy_(acc[a:b])
        for peer, keep, give in reversed(steps):
            ka, kb = rng(*keep)
            ga, gb = rng(*give)
            _exchange(flat[ka:kb], peer, flat[ga:gb])
    fold_out(flat)
    return tensor


def halving_swapped_halves(tensor):
    """R: halving-doubling where the rank with the bit set keeps the LOWER half (ownership
    mirrored); the all-gather undoes the same steps."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p == 1:
        return tensor
    if fold_in(flat):
        rank, q = dist.get_rank(), power_of_two_below(p)
        bounds = chunk_bounds(flat.numel(), q)

        def view(lo, hi):
            return flat[bounds[lo][0]:bounds[hi - 1][1]]
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if rank & mask else ((mid, hi), (lo, mid))
            mine = view(*keep)
            incoming = torch.empty_like(mine)
            _exchange(view(*give), rank ^ mask, incoming)
            mine += incoming
            steps.append((rank ^ mask, keep, give))
            lo, hi = keep
            mask //= 2
        for peer, keep, give in reversed(steps):
            _exchange(view(*keep), peer, view(*give))
    fold_out(flat)
    return tensor


def tree_binary(tensor, src):
    """W: a binary tree (heap order: v sends to 2v+1 then 2v+2), not the binomial tree:
    ceil(log2 p) rounds up to 6 ranks, more from 7 on."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.recv(tensor, ((v - 1) // 2 + src) % p)
    for child in (2 * v + 1, 2 * v + 2):
        if child < p:
            dist.send(tensor, (child + src) % p)
    return tensor


def tree_isend_children(tensor, src):
    """R: the binomial tree, the receive from the parent as irecv+wait, the children served
    by isends posted in order and waited at the end."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        parent = v & ~(1 << (v.bit_length() - 1))
        dist.irecv(tensor, (parent + src) % p).wait()
    works, m = [], 1 << v.bit_length()
    while v + m < p:
        works.append(dist.isend(tensor, (v + m + src) % p))
        m *= 2
    for w in works:
        w.wait()
    return tensor
