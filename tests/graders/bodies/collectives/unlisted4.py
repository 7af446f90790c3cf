"""Wrong bodies of the second round, part 3: a root that changes its role, waits that the
timeline did not see, and what a correct learner may still write around them.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted4.py.)
"""
import torch
import torch.distributed as dist


def _wait(works):
    for work in works:
        work.wait()


def gather_flood(tensor, dst):
    """Every rank sends its tensor to every other rank (an all-gather) and dst keeps what
    it gathered: right values on dst, p - 1 times the traffic, dst sending too."""
    rank, n = dist.get_rank(), dist.get_world_size()
    inbox = [tensor.clone() if r == rank else torch.empty_like(tensor) for r in range(n)]
    ops = [op for peer in range(n) if peer != rank
           for op in (dist.P2POp(dist.isend, tensor, peer),
                      dist.P2POp(dist.irecv, inbox[peer], peer))]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return inbox if rank == dst else None


def broadcast_echo(tensor, src):
    """Every rank sends what it received back to src "as an acknowledgement"."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    if rank == src:
        echoes = [torch.empty_like(tensor) for _ in range(n - 1)]
        peers = [p for p in range(n) if p != src]
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, p) for p in peers]))
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, e, p)
                                      for e, p in zip(echoes, peers)]))
        return tensor
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor, src)]))
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, src)]))
    return tensor
