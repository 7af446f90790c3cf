"""Third red team (lesson 10, labs/algorithms.py): learner bodies, wrong and right."""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below


def doubling_others_buffer(tensor):
    """W: recursive doubling that "never overwrites what it is sending": the partial sums
    received are accumulated in a separate buffer `others`, each step sends flat + others,
    and only at the end flat += others. Same partners, sizes, dtypes and step count as the
    reference, but each rank groups the additions differently (x_r + (P1 + P2 + ...)), so
    float ranks end with DIFFERENT bits (an all-reduce leaves the same bits everywhere;
    the reference's comment: a + b == b + a, both partners get the same bits)."""
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p == 1:
        return tensor
    if fold_in(flat):
        rank, q = dist.get_rank(), power_of_two_below(p)
        others = torch.zeros_like(flat)
        incoming = torch.empty_like(flat)
        mask = 1
        while mask < q:
            outgoing = flat + others
            ops = [dist.P2POp(dist.isend, outgoing, rank ^ mask),
                   dist.P2POp(dist.irecv, incoming, rank ^ mask)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            others += incoming
            mask <<= 1
        flat += others
    fold_out(flat)
    return tensor


def doubling_parity_blocking(tensor):
    """R: recursive doubling with blocking send/recv, the lower rank of each pair sending
    first; the fold inline with blocking ops too; fresh receive buffers."""
    flat = tensor.view(-1) if tensor.is_contiguous() else None
    if flat is None:
        raise ValueError("tensor must be contiguous")
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    q = 1
    while q * 2 <= p:
        q *= 2
    if rank >= q:
        dist.send(flat, rank - q)
        dist.recv(flat, rank - q)
        return tensor
    if rank + q < p:
        buf = torch.empty_like(flat)
        dist.recv(buf, rank + q)
        flat.add_(buf)
    mask = 1
    while mask < q:
        peer = rank ^ mask
        buf = torch.empty_like(flat)
        if rank < peer:
            dist.send(flat, peer)
            dist.recv(buf, peer)
        else:
            dist.recv(buf, peer)
            dist.send(flat, peer)
        flat.add_(buf)
        mask <<= 1
    if rank + q < p:
        dist.send(flat, rank + q)
    return tensor


def tree_far_child_first(tensor, src):
    """R: MPICH's binomial tree: relative rank v receives from v minus its LOWEST set bit,
    then sends to v + m for m = lowbit(v)/2, ..., 1 (the far child first); src (v = 0)
    starts from the largest power of two below p."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        low = v & -v
        dist.recv(tensor, (v - low + src) % p)
        mask = low >> 1
    else:
        mask = 1
        while mask * 2 < p:
            mask *= 2
        if p == 1:
            mask = 0
    while mask:
        if v + mask < p:
            dist.send(tensor, (v + mask + src) % p)
        mask >>= 1
    return tensor


def tree_mirrored(tensor, src):
    """R: the reference tree in mirrored relative ranks v = (src - rank) % p: a binomial
    tree too (rank = (src - v) % p), ceil(log2 p) rounds."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (src - rank) % p
    if v:
        parent = v - (1 << (v.bit_length() - 1))
        dist.recv(tensor, (src - parent) % p)
    mask = 1 << v.bit_length()
    while v + mask < p:
        dist.send(tensor, (src - v - mask) % p)
        mask <<= 1
    return tensor


def halving_others_kept(tensor):
    """W?: halving-doubling where each step's received half is added into a fresh sum
    `incoming + mine` written back (torch.add(incoming, mine, out=mine)): same bits
    (a + b == b + a). Control for the arithmetic style; R."""
    from labs.ring import chunk_bounds
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
                inc = torch.empty_like(mine)
                w = [dist.isend(chunks(*give), rank ^ mask), dist.irecv(inc, rank ^ mask)]
                for x in w:
                    x.wait()
                torch.add(inc, mine, out=mine)
                steps.append((rank ^ mask, keep, give))
                lo, hi = keep
                mask //= 2
            for peer, keep, give in reversed(steps):
                w = [dist.isend(chunks(*keep), peer), dist.irecv(chunks(*give), peer)]
                for x in w:
                    x.wait()
        fold_out(flat)
    return tensor
