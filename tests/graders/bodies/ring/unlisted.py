"""Wrong bodies of the kinds no grader names, one or more per kind (and right ones in other
styles): each kind is a class of mistake the graders must catch in general, from the
record and the reference, not because this file lists it.

  1. communication the old tracer did not see (process-group methods, coalesced, object and
     functional collectives);
  2. who talks to whom (direct sends to the owner, a star inside a ring, growing messages);
  3. what travels (a wider dtype);
  4. the method on some cases only (a built-in for small tensors);
  5. waiting (sends never waited, waited in part, a buffer written in flight);
  6. buffers that live on (a result the next call overwrites);
  8. right bodies in other styles (an extra barrier, another way to write a product).

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted.py.)
"""
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc

from labs.ring import chunk_bounds
from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_ring = copies.ring.ring_all_reduce
reference_reduce_scatter = copies.ring.ring_reduce_scatter


def _pg():
    return dist.distributed_c10d._get_default_group()


def _chunks(flat, n):
    return [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]


# 1. communication by other doors ------------------------------------------------------------

def ring_pg_allreduce(tensor):
    """The process group's own method: no dist.* function is called."""
    _pg().allreduce([tensor]).wait()
    return tensor


def ring_functional(tensor):
    """A functional collective (what torch.compile emits)."""
    tensor.copy_(fc.all_reduce(tensor, "sum", _pg()))
    return tensor


def ring_coalesced(tensor):
    dist.all_reduce_coalesced([tensor])
    return tensor


# 2. who talks to whom -------------------------------------------------------------------------

def rs_straight_to_owner(tensor):
    """Reduce-scatter with every chunk sent straight to its owner: right counts for 2 ranks,
    wrong partners beyond."""
    rank, n, _, _ = _ring()
    flat = tensor.view(-1)
    chunks = _chunks(flat, n)
    if n == 1:
        return chunks[0]
    incoming = [torch.empty_like(chunks[rank]) for _ in range(n)]
    ops = []
    for peer in range(n):
        if peer != rank:
            ops += [dist.P2POp(dist.isend, chunks[peer], peer),
                    dist.P2POp(dist.irecv, incoming[peer], peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for peer in range(n):
        if peer != rank:
            chunks[rank].add_(incoming[peer])
    return chunks[rank]


def ring_then_star(tensor):
    """A ring reduce-scatter, then an all-gather through rank 0 (a star)."""
    rank, n, _, _ = _ring()
    if n == 1:
        return tensor
    reference_reduce_scatter(tensor)
    flat = tensor.view(-1)
    chunks = _chunks(flat, n)
    if rank == 0:
        for peer in range(1, n):
            dist.recv(chunks[peer], peer)
        for peer in range(1, n):
            dist.send(flat, peer)
    else:
        dist.send(chunks[rank], 0)
        dist.recv(flat, 0)
    return tensor


# 3. what travels --------------------------------------------------------------------------------

def ring_float64_messages(tensor):
    """float32 summed in a float64 copy: every message twice as wide."""
    if tensor.dtype != torch.float32:
        return reference_ring(tensor)
    wide = tensor.double()
    reference_ring(wide)
    tensor.copy_(wide)
    return tensor


# 4. the method on some cases only -----------------------------------------------------------------

def ring_builtin_when_small(tensor):
    """dist.all_reduce below 100 elements, the ring above."""
    if tensor.numel() < 100:
        dist.all_reduce(tensor)
        return tensor
    return reference_ring(tensor)


def ring_builtin_for_large_worlds(tensor):
    """The ring up to 4 ranks, dist.all_reduce beyond."""
    if dist.get_world_size() > 4:
        dist.all_reduce(tensor)
        return tensor
    return reference_ring(tensor)


def ring_sends_waited_at_the_end(tensor):
    """Each step waits for its receive; every send is waited only when all is done, so a
    chunk can be overwritten while its send is still in flight."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    if n == 1:
        return tensor
    chunks, sends = _chunks(flat, n), []
    for step in range(n - 1):
        incoming = torch.empty_like(chunks[(rank - step - 2) % n])
        send = dist.isend(chunks[(rank - step - 1) % n], nxt)
        dist.irecv(incoming, prev).wait()
        chunks[(rank - step - 2) % n].add_(incoming)
        sends.append(send)
    for step in range(n - 1):
        sends.append(dist.isend(chunks[(rank - step) % n], nxt))
        dist.irecv(chunks[(rank - step - 1) % n], prev).wait()
    for send in sends:
        send.wait()
    return tensor


def ring_with_barrier(tensor):
    """Correct, with an extra barrier on each side."""
    dist.barrier()
    reference_ring(tensor)
    dist.barrier()
    return tensor
