"""Lesson 10 (tree_broadcast, recursive_doubling_all_reduce, halving_doubling_all_reduce):
wrong bodies, each missing what the exercise teaches, and correct ones in another style.
tests/lessons/test_algorithms.py grades each with impl="tests.graders.bodies.algorithms:<name>".
"""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below, scratch
from tests.graders.bodies import copies

right_doubling = copies.algorithms.recursive_doubling_all_reduce
ring_all_reduce = copies.ring.ring_all_reduce


# ---- tree_broadcast ----------------------------------------------------------------------

def broadcast_builtin(tensor, src):
    """Right values, but the built-in collective does the work."""
    dist.broadcast(tensor, src)
    return tensor


def broadcast_star(tensor, src):
    """Lesson 07's star: the root sends p-1 messages, p-1 rounds."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for peer in range(p):
            if peer != src:
                dist.send(tensor, peer)
    else:
        dist.recv(tensor, src)
    return tensor


def broadcast_chain(tensor, src):
    """A pipeline of whole tensors: p-1 rounds."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.recv(tensor, (rank - 1) % p)
    if v + 1 < p:
        dist.send(tensor, (rank + 1) % p)
    return tensor


def broadcast_tree_far_first(tensor, src):
    """Correct, another style: the root sends to the farthest half first (masks descending)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    mask = 1 << max(p - 1, 1).bit_length()
    while mask > 1:
        mask >>= 1
        if v % (2 * mask) == mask:            # my turn to receive, from v - mask
            dist.recv(tensor, (v - mask + src) % p)
        elif v % (2 * mask) == 0 and v + mask < p:
            dist.send(tensor, (v + mask + src) % p)
    return tensor


# ---- all-reduce --------------------------------------------------------------------------

def all_reduce_builtin(tensor):
    """Right values, but gloo's own all_reduce does the work."""
    dist.all_reduce(tensor)
    return tensor


def all_reduce_ring(tensor):
    """Lesson 05's ring: the right bytes, but 2(p-1) steps to the neighbours."""
    return ring_all_reduce(tensor)


def all_reduce_doubling(tensor):
    """Recursive doubling: log2 p steps, but whole tensors (not halving-doubling)."""
    return right_doubling(tensor)


def all_reduce_new_tensor(tensor):
    """Sums correctly into a new tensor and returns it; the caller's tensor is unchanged."""
    return right_doubling(tensor.clone())


def all_reduce_no_fold(tensor):
    """Recursive doubling that forgets the extra ranks: their partner does not exist."""
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    incoming, mask = scratch(flat.numel(), flat.dtype), 1
    while mask < p:
        if rank ^ mask < p:
            ops = [dist.P2POp(dist.isend, flat, rank ^ mask),
                   dist.P2POp(dist.irecv, incoming, rank ^ mask)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            flat.add_(incoming)
        mask <<= 1
    return tensor


def doubling_far_first(tensor):
    """Correct, another style: partners rank ^ q/2 first, one isend/irecv pair per step."""
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p > 1 and fold_in(flat):
        incoming, mask = torch.empty_like(flat), power_of_two_below(p) // 2
        while mask:
            works = [dist.irecv(incoming, rank ^ mask), dist.isend(flat, rank ^ mask)]
            for work in works:
                work.wait()
            flat.add_(incoming)
            mask //= 2
    if p > 1:
        fold_out(flat)
    return tensor


def halving_near_first(tensor):
    """Correct, another style: halve the element range (not chunk_bounds), partner
    rank ^ 1 first; rank r ends up owning the block whose index is r bit-reversed."""
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p > 1 and fold_in(flat):
        q, lo, hi, mask, steps = power_of_two_below(p), 0, flat.numel(), 1, []
        while mask < q:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            incoming = torch.empty(keep[1] - keep[0], dtype=flat.dtype)
            works = [dist.irecv(incoming, rank ^ mask),
                     dist.isend(flat[give[0]:give[1]], rank ^ mask)]
            for work in works:
                work.wait()
            flat[keep[0]:keep[1]].add_(incoming)
            steps.append((rank ^ mask, keep, give))
            lo, hi = keep
            mask <<= 1
        for peer, keep, give in reversed(steps):
            works = [dist.irecv(flat[give[0]:give[1]], peer),
                     dist.isend(flat[keep[0]:keep[1]], peer)]
            for work in works:
                work.wait()
    if p > 1:
        fold_out(flat)
    return tensor
