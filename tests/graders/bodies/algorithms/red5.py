"""Red-team G bodies for lesson 10 (labs/algorithms.py)."""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below


def tree_range_split(tensor, src):
    """RIGHT: a binomial-depth tree by splitting ranges: the holder of relative range
    [lo, hi) sends to lo + ceil((hi - lo) / 2), which takes the upper half; each rank
    receives once, ceil(log2 p) rounds (another tree than the reference's for p not a
    power of two)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    lo, hi = 0, p
    while hi - lo > 1:
        mid = lo + (hi - lo + 1) // 2
        if v == lo:
            dist.send(tensor, (mid + src) % p)
            hi = mid
        elif v == mid:
            dist.recv(tensor, (lo + src) % p)
            lo = mid
        elif v > mid:
            lo = mid
        else:
            hi = mid
    return tensor


def doubling_own_fold(tensor):
    """RIGHT: recursive doubling with the fold written out: an extra rank r >= q isends its
    tensor to r - q and irecvs the sum back; r - q adds it first and sends the sum last;
    each exchange is isend + irecv into a fresh buffer, both waited."""
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    q = power_of_two_below(p)
    if rank >= q:
        dist.isend(flat, rank - q).wait()
        dist.irecv(flat, rank - q).wait()
        return tensor
    if rank + q < p:
        extra = torch.empty_like(flat)
        dist.irecv(extra, rank + q).wait()
        flat.add_(extra)
    mask = 1
    while mask < q:
        incoming = torch.empty_like(flat)
        works = [dist.irecv(incoming, rank ^ mask), dist.isend(flat, rank ^ mask)]
        for w in works:
            w.wait()
        flat.add_(incoming)
        mask <<= 1
    if rank + q < p:
        dist.isend(flat, rank + q).wait()
    return tensor


def _doubling_late(tensor, handshake):
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            q = power_of_two_below(p)
            if handshake and q > 1:       # a zero-element hello to the first partner
                hello = [dist.P2POp(dist.isend, flat.new_empty(0), rank ^ 1),
                         dist.P2POp(dist.irecv, flat.new_empty(0), rank ^ 1)]
                for w in dist.batch_isend_irecv(hello):
                    w.wait()
            pending, mask = [], 1
            while mask < q:
                incoming = torch.empty_like(flat)
                send, recv = dist.batch_isend_irecv(
                    [dist.P2POp(dist.isend, flat.clone(), rank ^ mask),
                     dist.P2POp(dist.irecv, incoming, rank ^ mask)])
                recv.wait()                # the send is waited only at the end
                pending.append(send)
                flat.add_(incoming)
                mask <<= 1
            for w in pending:
                w.wait()
        fold_out(flat)
    return tensor


def doubling_late_send_waits_handshake(tensor):
    """WRONG (waits too late): each step's send (of a clone) is waited only after the
    whole exchange, while later steps post theirs; a zero-element hello to the first
    partner before the rounds."""
    return _doubling_late(tensor, handshake=True)


def doubling_late_send_waits_control(tensor):
    """WRONG (control): the same without the zero-element hello."""
    return _doubling_late(tensor, handshake=False)
