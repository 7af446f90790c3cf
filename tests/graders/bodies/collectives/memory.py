"""Wrong bodies of the third round: right values, wrong with memory, precision or method.

* the caller's memory: a result put in new memory (`.data =`, `set_()`), an argument the
  contract only reads written for a moment and put back;
* precision: sums taken through a narrower floating type than the tensor's;
* a receive buffer used before its wait (the data is usually there on gloo: a race);
* lesson 07's stars with extra or relayed messages; a binomial tree that is a star or a chain
  for small tensors; a "pipelined" ring that receives one segment at a time.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/memory.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies.copies import collectives


def _run(ops):
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()


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
