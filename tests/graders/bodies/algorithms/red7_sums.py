"""Seventh round, ours: what travels in a reduction (the partial sums, on the probe of
labs.harness.grading.sums), wrong and right bodies that no red team wrote.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red7_sums.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies._shared import half as _half


def _swap(send, peer, recv, source=None):
    """Send to `peer` and receive from `source` (default: the same peer), one batch."""
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer),
                                        dist.P2POp(dist.irecv, recv, peer if source is None
                                                   else source)]):
        work.wait()


def _fold_in(flat, q):
    """Ranks q.. send their tensor to rank - q and wait for the result; True for the core."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank >= q:
        dist.send(flat, rank - q)
        return False
    if rank + q < p:
        extra = torch.empty_like(flat)
        dist.recv(extra, rank + q)
        flat.add_(extra)
    return True


def _fold_out(flat, q):
    rank, p = dist.get_rank(), dist.get_world_size()
    if rank >= q:
        dist.recv(flat, rank - q)
    elif rank + q < p:
        dist.send(flat, rank + q)


def _halving(tensor, cut, encode=None, decode=None):
    """Halving-doubling with chunk bounds from `cut(numel, q)`."""
    flat, p = tensor.view(-1), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if _fold_in(flat, q):
        rank, bounds = dist.get_rank(), cut(flat.numel(), q)
        lo, hi, mask, steps = 0, q, q // 2, []
        while mask:
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
            mine = flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]]
            out = flat[bounds[give[0]][0]:bounds[give[1] - 1][1]]
            wire = torch.empty_like(mine)
            _swap(encode(out) if encode else out, rank ^ mask, wire)
            mine.add_(decode(wire) if decode else wire)
            steps.append((rank ^ mask, keep, give))
            lo, hi = keep
            mask //= 2
        for peer, keep, give in reversed(steps):
            _swap(flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]], peer,
                  flat[bounds[give[0]][0]:bounds[give[1] - 1][1]])
    _fold_out(flat, q)
    return tensor


def _bounds_larger_last(numel, parts):
    """Chunk sizes differing by one, the larger ones last (the reference: first)."""
    size, extra = divmod(numel, parts)
    sizes = [size + (i >= parts - extra) for i in range(parts)]
    starts = [sum(sizes[:i]) for i in range(parts)]
    return [(a, a + n) for a, n in zip(starts, sizes)]


def halving_scaled_wire(tensor):
    """WRONG (what travels): halving-doubling whose reduce-scatter messages are doubled and
    halved on arrival."""
    return _halving(tensor, chunk_bounds, encode=lambda c: c * 2, decode=_half)


def halving_larger_chunks_last(tensor):
    """RIGHT: halving-doubling cutting the tensor another way (the larger chunks last): the
    method leaves the cut free, the sums are the same."""
    return _halving(tensor, _bounds_larger_last)


def _tree(tensor, src, encode=None, decode=None):
    """The binomial broadcast tree, each message through encode/decode."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    wire = torch.empty_like(tensor) if v else tensor
    if v:
        dist.recv(wire, (v - (1 << (v.bit_length() - 1)) + src) % p)
        tensor.copy_(decode(wire) if decode else wire)
    out = encode(tensor) if encode else tensor
    mask = 1 << v.bit_length()
    while v + mask < p:
        dist.send(out, (v + mask + src) % p)
        mask <<= 1
    return tensor


def _flip(t):
    """Every bit inverted (its own inverse), in any dtype."""
    as_bytes = t.contiguous().view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)
    return (~as_bytes).view(t.dtype).reshape(t.shape)


def tree_bits_flipped(tensor, src):
    """WRONG (what travels): the tree, every message with its bits inverted and inverted back
    on arrival: the values and the routes are right, the messages are not the data."""
    return _tree(tensor, src, encode=_flip, decode=_flip)


def doubling_combined_sent_back(tensor):
    """WRONG (what travels): recursive doubling where, in each round, the lower rank of a pair
    sends its running sum, and the upper one adds it and sends back the combined sum. Same
    partners, one message each way of the same size per round, the same values at the end;
    but the upper rank sends the lower one its own data back, which the method never does."""
    flat, p = tensor.view(-1), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1 << (p.bit_length() - 1)
    if _fold_in(flat, q):
        rank, mask = dist.get_rank(), 1
        while mask < q:
            peer = rank ^ mask
            if rank & mask:
                incoming = torch.empty_like(flat)
                dist.recv(incoming, peer)
                flat.add_(incoming)
                dist.send(flat, peer)
            else:
                dist.send(flat, peer)
                dist.recv(flat, peer)
            mask <<= 1
    _fold_out(flat, q)
    return tensor
