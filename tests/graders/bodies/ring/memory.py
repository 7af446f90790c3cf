"""Wrong bodies of the third round: right values, wrong with memory, precision or method.

* the caller's memory: a result put in new memory (`.data =`, `set_()`), an argument the
  contract only reads written for a moment and put back;
* precision: sums taken through a narrower floating type than the tensor's;
* a receive buffer used before its wait (the data is usually there on gloo: a race);
* lesson 07's stars with extra or relayed messages; a binomial tree that is a star or a chain
  for small tensors; a "pipelined" ring that receives one segment at a time.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/memory.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies.copies import ring


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
