"""Correct bodies in other styles, second round, part 2 (lessons 08-10): see others.py.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others2.py.)
"""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import ring_places as _ring


def _wait(works):
    for work in works:
        work.wait()


# lesson 09 ------------------------------------------------------------------------------------

def forward_tagged_detached(output, next_rank):
    got = torch.zeros(output.shape, dtype=output.dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, next_rank, tag=9),
                                  dist.P2POp(dist.isend, output.detach().contiguous(), next_rank, tag=9)]))
    return got


def rotate_v_first(k, v):
    """v before k on both sides (FIFO holds), the receives first."""
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, v_next, prev),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.isend, k, nxt)])
    return k_next, v_next, works


def rotate_with_barrier(k, v):
    """A barrier first (it moves no data), then the rotation, its requests handed back."""
    dist.barrier()
    rank, n, nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, tuple(works)
