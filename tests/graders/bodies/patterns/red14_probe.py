"""Round 14 (ours): wrong kinds no list named, each caught by the graders as they are: requests
waited before they are handed back, a tree that serves its largest subtree last, a stage's
send and receive in two batches (both stages send first: a real deadlock on gloo too).

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_probe.py.)
"""
import torch
import torch.distributed as dist


# WRONG: rotate_kv waits for its own requests before handing them back (no overlap left).
def rotate_kv_waited_inside(k, v):
    rank, n = dist.get_rank(), dist.get_world_size()
    k2, v2 = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, (rank + 1) % n),
                                    dist.P2POp(dist.isend, v, (rank + 1) % n),
                                    dist.P2POp(dist.irecv, k2, (rank - 1) % n),
                                    dist.P2POp(dist.irecv, v2, (rank - 1) % n)])
    for w in works:
        w.wait()
    return k2, v2, works


# WRONG: the stage's send and receive in two batches, one after the other (not fused).
# (graded as send_forward_recv_backward by attribute)
def send_forward_two_batches(output, next_rank):
    received = torch.empty(output.shape, dtype=output.dtype)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, output.detach().contiguous(),
                                                next_rank)]):
        w.wait()
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, received, next_rank)]):
        w.wait()
    return received

