"""Wrong bodies of the third round: right values, wrong with memory, precision or method.

* the caller's memory: a result put in new memory (`.data =`, `set_()`), an argument the
  contract only reads written for a moment and put back;
* precision: sums taken through a narrower floating type than the tensor's;
* a receive buffer used before its wait (the data is usually there on gloo: a race);
* lesson 07's stars with extra or relayed messages; a binomial tree that is a star or a chain
  for small tensors; a "pipelined" ring that receives one segment at a time.
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies.copies import algorithms, collectives, ring


def _run(ops):
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()


# ---- the caller's memory ------------------------------------------------------------------

def ring_into_new_memory(tensor):
    """The sum in a clone, then `tensor.data = clone`: a view of the caller's tensor, or a
    flat bucket it belongs to, never sees it."""
    total = ring.ring_all_reduce(tensor.clone())
    tensor.data = total
    return tensor


def tree_into_new_memory(tensor, src):
    buffer = tensor.clone()
    algorithms.tree_broadcast(buffer, src)
    tensor.set_(buffer)
    return tensor


def all_to_all_new_outputs(outputs, inputs):
    """Receives into new tensors, then rebinds each output's .data to them."""
    fresh = [torch.empty_like(t) for t in outputs]
    collectives.p2p_all_to_all(fresh, inputs)
    for out, new in zip(outputs, fresh):
        out.data = new
    return outputs


def gather_negates_for_a_moment(tensor, dst):
    """Sends -tensor (negated in place), negates it back, and dst negates what arrived: the
    caller's tensor is right afterwards, and was written meanwhile."""
    tensor.neg_()
    out = collectives.p2p_gather(tensor, dst)
    tensor.neg_()
    if out is not None:
        for r, t in enumerate(out):
            if r != dst:
                t.neg_()
        out[dst] = tensor.clone()
    return out


# ---- precision ------------------------------------------------------------------------------

def _ring(tensor, add):
    """Lesson 05's ring, each step's incoming chunk summed by `add(into, incoming)`."""
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for step in range(2 * (n - 1)):
        out, into = chunks[(rank - step - 1) % n], chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(into)
        _run([dist.P2POp(dist.isend, out, (rank + 1) % n),
              dist.P2POp(dist.irecv, incoming, (rank - 1) % n)])
        add(into, incoming) if step < n - 1 else into.copy_(incoming)
    return tensor


def ring_adds_in_float32(tensor):
    """Messages in the tensor's own dtype, but every sum taken in float32 and cast back:
    float64 sums lose 29 bits, int64 ones everything beyond 2**24."""
    def add(into, incoming):
        into.copy_((into.float() + incoming.float()).to(into.dtype))
    return _ring(tensor, add)


def doubling_adds_in_float64(tensor):
    """Recursive doubling on a power of two of ranks, each sum taken in float64: integers
    are exact below 2**53 only."""
    rank, n, mask = dist.get_rank(), dist.get_world_size(), 1
    while mask < n:
        incoming = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, rank ^ mask),
              dist.P2POp(dist.irecv, incoming, rank ^ mask)])
        tensor.copy_((tensor.double() + incoming.double()).to(tensor.dtype))
        mask <<= 1
    return tensor


# ---- a receive buffer used before its wait ------------------------------------------------

def ring_adds_before_waiting(tensor):
    """The ring with the incoming chunk read before its receive is waited: on gloo the data
    has mostly arrived, so the values are mostly right."""
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for step in range(2 * (n - 1)):
        out, into = chunks[(rank - step - 1) % n], chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(into)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, (rank + 1) % n),
                                        dist.P2POp(dist.irecv, incoming, (rank - 1) % n)])
        works[0].wait()
        copied = incoming.clone()              # read before the receive is waited
        works[1].wait()
        into.add_(copied) if step < n - 1 else into.copy_(copied)
    return tensor


# ---- lesson 07's stars, lesson 10's tree, the pipeline ------------------------------------

def broadcast_then_gossip(tensor, src):
    """The star, then every other rank passes its copy on to the next one "to check"."""
    collectives.p2p_broadcast(tensor, src)
    rank, n = dist.get_rank(), dist.get_world_size()
    others = [r for r in range(n) if r != src]
    if rank != src and len(others) > 1:
        i = others.index(rank)
        _run([dist.P2POp(dist.isend, tensor, others[(i + 1) % len(others)]),
              dist.P2POp(dist.irecv, torch.empty_like(tensor), others[i - 1])])
    return tensor


def broadcast_relayed_by_one_rank(tensor, src):
    """src sends once, to the next rank, which sends to all the others."""
    rank, n = dist.get_rank(), dist.get_world_size()
    relay = (src + 1) % n
    if n == 1:
        return tensor
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, relay)])
    elif rank == relay:
        _run([dist.P2POp(dist.irecv, tensor, src)])
        _run([dist.P2POp(dist.isend, tensor, r) for r in range(n) if r not in (src, relay)])
    else:
        _run([dist.P2POp(dist.irecv, tensor, relay)])
    return tensor


def gather_sends_twice(tensor, dst):
    """Every rank sends its tensor twice; dst keeps the second."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    out = [torch.empty_like(tensor) for _ in range(n)]
    out[dst].copy_(tensor)
    for _ in range(2):
        _run([dist.P2POp(dist.irecv, out[r], r) for r in range(n) if r != dst])
    return out


def tree_star_for_small(tensor, src):
    """A star (p - 1 rounds) when the tensor has no more elements than ranks."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if tensor.numel() > n:
        return algorithms.tree_broadcast(tensor, src)
    if rank == src:
        for r in range(n):
            if r != src:
                dist.send(tensor, r)
    else:
        dist.recv(tensor, src)
    return tensor


def pipelined_one_segment_at_a_time(tensor, segment_bytes=4 << 20):
    """Segment-sized messages, but each one sent, received, waited and added before the next
    is posted: the messages of a pipeline with none of its overlap."""
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    if n == 1:
        return tensor
    bounds = chunk_bounds(flat.numel(), n)
    seg = max(1, segment_bytes // flat.element_size())
    for step in range(2 * (n - 1)):
        (a0, a1), (b0, b1) = bounds[(rank - step - 1) % n], bounds[(rank - step - 2) % n]
        outs = [flat[i:min(i + seg, a1)].clone() for i in range(a0, a1, seg)]
        into = [flat[i:min(i + seg, b1)] for i in range(b0, b1, seg)]
        for k in range(max(len(outs), len(into))):
            ops = [dist.P2POp(dist.isend, outs[k], (rank + 1) % n)] if k < len(outs) else []
            incoming = torch.empty_like(into[k]) if k < len(into) else None
            if incoming is not None:
                ops.append(dist.P2POp(dist.irecv, incoming, (rank - 1) % n))
            _run(ops)
            if incoming is not None:
                into[k].add_(incoming) if step < n - 1 else into[k].copy_(incoming)
    return tensor
