"""Right bodies in styles the references do not use (blocking parity pairs, isend/irecv
with tags, torch's own flatten helpers, .grad replaced by views), and one wrong body that
does more than the contract asks.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/styles.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


def _ring(tensor):
    """(flat view, rank, world size, chunk bounds, next rank, previous rank)."""
    if not tensor.is_contiguous():
        raise ValueError("contiguous tensor needed")
    flat = tensor.view(-1)
    rank, n = dist.get_rank(), dist.get_world_size()
    return flat, rank, n, chunk_bounds(flat.numel(), n), (rank + 1) % n, (rank - 1) % n


def ring_parity_blocking(tensor):
    """The ring with blocking send/recv, even ranks send first (no batch)."""
    flat, rank, n, b, nxt, prev = _ring(tensor)
    if n == 1:
        return tensor
    buf = torch.empty(b[0][1] - b[0][0], dtype=flat.dtype)

    def exchange(out, into):
        if rank % 2 == 0:
            dist.send(out, nxt)
            dist.recv(into, prev)
        else:
            dist.recv(into, prev)
            dist.send(out, nxt)

    for step in range(n - 1):
        s0, s1 = b[(rank - step - 1) % n]
        r0, r1 = b[(rank - step - 2) % n]
        inc = buf[:r1 - r0]
        exchange(flat[s0:s1].clone(), inc)
        flat[r0:r1] += inc
    for step in range(n - 1):
        s0, s1 = b[(rank - step) % n]
        r0, r1 = b[(rank - step - 1) % n]
        inc = buf[:r1 - r0]
        exchange(flat[s0:s1].clone(), inc)
        flat[r0:r1] = inc
    return tensor


def ring_isend_irecv(tensor):
    """The ring with isend/irecv pairs, recv posted first, both waited."""
    flat, rank, n, b, nxt, prev = _ring(tensor)
    if n == 1:
        return tensor
    for phase in range(2):
        for step in range(n - 1):
            s0, s1 = b[(rank - step - 1 + phase) % n]
            r0, r1 = b[(rank - step - 2 + phase) % n]
            inc = torch.empty(r1 - r0, dtype=flat.dtype)
            rr = dist.irecv(inc, src=prev, tag=phase)
            sr = dist.isend(flat[s0:s1], dst=nxt, tag=phase)
            rr.wait()
            sr.wait()
            if phase == 0:
                flat[r0:r1].add_(inc)
            else:
                flat[r0:r1].copy_(inc)
    return tensor


def ring_counter_clockwise(tensor):
    """A correct sum around the ring the other way (r sends to r - 1): outside the contract,
    which fixes the route r -> r + 1 that the lesson teaches and the grader reads."""
    flat, rank, n, b, nxt, prev = _ring(tensor)
    if n == 1:
        return tensor
    for phase in range(2):
        for step in range(n - 1):
            s0, s1 = b[(rank + step + 1 - phase) % n]
            r0, r1 = b[(rank + step + 2 - phase) % n]
            inc = torch.empty(r1 - r0, dtype=flat.dtype)
            ops = [dist.P2POp(dist.isend, flat[s0:s1].clone(), prev),
                   dist.P2POp(dist.irecv, inc, nxt)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            if phase == 0:
                flat[r0:r1].add_(inc)
            else:
                flat[r0:r1].copy_(inc)
    return tensor

