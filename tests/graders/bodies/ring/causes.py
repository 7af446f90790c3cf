"""Issue 44's learner bodies: messages that must name the cause (what the body did, in the
lesson's words), and correct bodies a probe once rejected.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/causes.py.)
"""
import torch
import torch.distributed as dist



def ring_floor_chunks(tensor):
    """Chunks of numel // n: the last numel % n elements are never reduced."""
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    q = flat.numel() // n
    nxt, prev = (rank + 1) % n, (rank - 1) % n

    def chunk(c):
        return flat[c * q:(c + 1) * q]
    for phase in range(2):
        for step in range(n - 1):
            out, into = chunk((rank - step - phase) % n), chunk((rank - step - 1 - phase) % n)
            inc = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, inc, prev)]):
                work.wait()
            into.add_(inc) if phase == 0 else into.copy_(inc)
    return tensor


def ring_gather_floor_bounds(tensor):
    """The reduce-scatter on chunk_bounds, then an all-gather on bounds of its own
    (c * numel // n): where those differ, it forwards elements no rank has finished."""
    from labs.ring import chunk_bounds
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    numel, nxt, prev = flat.numel(), (rank + 1) % n, (rank - 1) % n
    bounds = [flat[a:b] for a, b in chunk_bounds(numel, n)]
    for step in range(n - 1):
        out, into = bounds[(rank - step - 1) % n], bounds[(rank - step - 2) % n]
        inc = torch.empty_like(into)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                            dist.P2POp(dist.irecv, inc, prev)]):
            work.wait()
        into.add_(inc)

    def chunk(c):
        return flat[c * numel // n:(c + 1) * numel // n]
    for step in range(n - 1):
        out, into = chunk((rank - step) % n), chunk((rank - step - 1) % n)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                            dist.P2POp(dist.irecv, into, prev)]):
            work.wait()
    return tensor


def ring_chunks_counted_up(tensor):
    """The ring's route (to rank + 1), but the chunks counted up (rank + step): each rank
    forwards a chunk it has not added to yet."""
    from labs.ring import chunk_bounds
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for phase in range(2):
        for step in range(n - 1):
            out, into = chunks[(rank + step + phase) % n], chunks[(rank + step - 1 + phase) % n]
            inc = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, inc, prev)]):
                work.wait()
            into.add_(inc) if phase == 0 else into.copy_(inc)
    return tensor
