"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow).

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red11_a.py.)
"""

import torch.distributed as dist


# -- lesson 03: safe_ring_shift --------------------------------------------------------------

# -- lesson 10: tree_broadcast ---------------------------------------------------------------

def tree_broadcast_mpich_order(tensor, src):
    """RIGHT (the other binomial tree, MPICH's: in relative ranks v = (rank - src) % p, v > 0
    receives from v minus its LOWEST set bit, then sends to v + m for the powers of two m
    below that bit, largest first; the root starts with the largest power below p). Every
    rank receives once, ceil(log2 p) rounds, holders double each round."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return tensor
    v = (rank - src) % p
    top = 1
    while top < p:
        top <<= 1
    low = (v & -v) if v else top
    if v:
        dist.recv(tensor, (v - low + src) % p)
    m = low >> 1
    while m:
        if v + m < p:
            dist.send(tensor, (v + m + src) % p)
        m >>= 1
    return tensor
