"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


def _paired(send, peer, recv):
    """A blocking exchange with `peer`: the lower rank sends first (no batch)."""
    if dist.get_rank() < peer:
        dist.send(send, peer)
        dist.recv(recv, peer)
    else:
        dist.recv(recv, peer)
        dist.send(send, peer)


# RIGHT: recursive doubling with blocking send/recv, the lower rank of a pair sending first.
def doubling_blocking_pairs(tensor):
    from labs.algorithms import fold_in, fold_out
    flat = tensor.view(-1)
    rank, p = dist.get_rank(), dist.get_world_size()
    q = 1 << (p.bit_length() - 1)
    if p > 1 and fold_in(flat):
        incoming = torch.empty_like(flat)
        mask = 1
        while mask < q:
            _paired(flat, rank ^ mask, incoming)
            flat += incoming
            mask <<= 1
    if p > 1:
        fold_out(flat)
    return tensor


# RIGHT: the tree broadcast with non-blocking forwards, all waited at the end.
def tree_isend_children(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.recv(tensor, (v - (1 << (v.bit_length() - 1)) + src) % p)
    works, mask = [], 1 << v.bit_length()
    while v + mask < p:
        works.append(dist.isend(tensor, (v + mask + src) % p))
        mask <<= 1
    for w in works:
        w.wait()
    return tensor


# RIGHT: halving-doubling with fresh receive buffers and the halves found by index arithmetic.
def hd_fresh_buffers(tensor):
    from labs.algorithms import fold_in, fold_out
    flat = tensor.view(-1)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if fold_in(flat):
        b = chunk_bounds(flat.numel(), q)
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            ks, ke = b[keep[0]][0], b[keep[1] - 1][1]
            gs, ge = b[give[0]][0], b[give[1] - 1][1]
            got = torch.empty(ke - ks, dtype=flat.dtype)
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[gs:ge], rank ^ mask),
                                             dist.P2POp(dist.irecv, got, rank ^ mask)]):
                w.wait()
            flat[ks:ke] += got
            steps.append((rank ^ mask, (ks, ke), (gs, ge)))
            lo, hi = keep
            mask //= 2
        for peer, (ks, ke), (gs, ge) in reversed(steps):
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[ks:ke], peer),
                                             dist.P2POp(dist.irecv, flat[gs:ge], peer)]):
                w.wait()
    fold_out(flat)
    return tensor
