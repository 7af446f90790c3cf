"""Correct bodies in other styles, second round, part 2 (lessons 08-10): see others.py.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others2.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_halving = copies.algorithms.halving_doubling_all_reduce


def _wait(works):
    for work in works:
        work.wait()


# lesson 10 ------------------------------------------------------------------------------------

def tree_batched(tensor, src):
    """The binomial tree, its receive and its sends each through batch_isend_irecv."""
    rank, n = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % n
    if v:
        parent = v - (1 << (v.bit_length() - 1))
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor, (parent + src) % n)]))
    mask = 1 << v.bit_length()
    while v + mask < n:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (v + mask + src) % n)]))
        mask <<= 1
    return tensor


def doubling_isend_irecv(tensor):
    """Recursive doubling with isend/irecv and the fold written out, fresh buffers."""
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    q = 1 << (p.bit_length() - 1)
    if rank >= q:
        dist.send(flat, rank - q)
        dist.recv(flat, rank - q)
        return tensor
    if rank + q < p:
        extra = torch.empty_like(flat)
        dist.recv(extra, rank + q)
        flat += extra
    mask = 1
    while mask < q:
        incoming = torch.empty_like(flat)
        reqs = [dist.isend(flat, rank ^ mask), dist.irecv(incoming, rank ^ mask)]
        _wait(reqs)
        flat += incoming
        mask <<= 1
    if rank + q < p:
        dist.send(flat, rank + q)
    return tensor


def halving_with_barrier(tensor):
    dist.barrier()
    return reference_halving(tensor)
