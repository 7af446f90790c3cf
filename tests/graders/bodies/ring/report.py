"""Lesson 05, issue 52 item 4: bodies whose failing cases share one cause, for the report
that names it (labs/harness/grading/evidence.py)."""
import torch
import torch.distributed as dist


def ring_drops_remainder(tensor):
    """A right ring on chunks of numel // p elements: the last numel % p elements are never
    reduced (each rank keeps its own input there); sizes divisible by p are right."""
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    n = flat.numel() // p
    nxt, prev = (rank + 1) % p, (rank - 1) % p

    def chunk(c):
        return flat[c % p * n:(c % p + 1) * n]
    for phase in range(2):          # reduce-scatter, then all-gather
        for step in range(p - 1):
            out, into = chunk(rank - step + phase), chunk(rank - step - 1 + phase)
            incoming = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, incoming, prev)]):
                work.wait()
            into.add_(incoming) if phase == 0 else into.copy_(incoming)
    return tensor


def ring_all_gather_off_by_one(tensor):
    """The chunks right, the all-gather one chunk behind: wrong on every size, so no shared
    cause may be claimed from which cases pass (nothing non-empty passes)."""
    from labs.ring import chunk_bounds
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), p)]
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    for phase in range(2):
        for step in range(p - 1):
            out, into = chunks[(rank - step) % p], chunks[(rank - step - 1) % p]
            incoming = torch.empty_like(into)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, incoming, prev)]):
                work.wait()
            into.add_(incoming) if phase == 0 else into.copy_(incoming)
    return tensor


def ring_builtin_reduce_scatter(tensor):
    """The forbidden collective (issue 55 item 5): reduce_scatter_tensor, then all_gather.
    On a size gloo cannot split, gloo's own C++ check raises first; the grade must say the
    collective, not gloo's check."""
    p = dist.get_world_size()
    flat = tensor.view(-1)
    mine = torch.empty(flat.numel() // p, dtype=tensor.dtype)
    dist.reduce_scatter_tensor(mine, flat)
    dist.all_gather_into_tensor(flat, mine)
    return tensor


def ring_reads_past_the_end(tensor):
    """Raises IndexError in its own line: the traceback shows the body's frames only."""
    flat = tensor.view(-1)
    flat[flat.numel()] += 0
    return tensor


def ring_one_element_buffers(tensor):
    """A right ring, but every receive buffer holds at least one element: an empty chunk
    (fewer elements than ranks) is received into a one-element buffer. Right values; the
    message sizes differ from the method's, and the grade must say that size."""
    from labs.ring import chunk_bounds
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), p)]
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    for phase in range(2):
        for step in range(p - 1):
            out = chunks[(rank - step + phase) % p]
            into = chunks[(rank - step - 1 + phase) % p]
            incoming = torch.empty(max(into.numel(), 1), dtype=tensor.dtype)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                                dist.P2POp(dist.irecv, incoming, prev)]):
                work.wait()
            got = incoming[:into.numel()]
            into.add_(got) if phase == 0 else into.copy_(got)
    return tensor



def reduce_scatter_adds_floor(tensor):
    """The method's ring, each received chunk added up to numel // p elements only: a
    chunk one element longer (numel % p != 0) keeps its last element unreduced (the rank's
    own input); sizes divisible by p are right, and every message is the method's."""
    from labs.ring import chunk_bounds
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    n = flat.numel() // p
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), p)]
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    for step in range(p - 1):
        out, into = chunks[(rank - step - 1) % p], chunks[(rank - step - 2) % p]
        incoming = torch.empty_like(into)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, out.clone(), nxt),
                                            dist.P2POp(dist.irecv, incoming, prev)]):
            work.wait()
        into[:n].add_(incoming[:n])
    return chunks[rank]
