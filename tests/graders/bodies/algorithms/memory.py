"""Wrong bodies of the third round: right values, wrong with memory, precision or method.

* the caller's memory: a result put in new memory (`.data =`, `set_()`), an argument the
  contract only reads written for a moment and put back;
* precision: sums taken through a narrower floating type than the tensor's;
* a receive buffer used before its wait (the data is usually there on gloo: a race);
* lesson 07's stars with extra or relayed messages; a binomial tree that is a star or a chain
  for small tensors; a "pipelined" ring that receives one segment at a time.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/memory.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies.copies import algorithms


def _run(ops):
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()


def tree_into_new_memory(tensor, src):
    buffer = tensor.clone()
    algorithms.tree_broadcast(buffer, src)
    tensor.set_(buffer)
    return tensor


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
