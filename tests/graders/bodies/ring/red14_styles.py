"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds


# RIGHT: the ring all-reduce with dist.isend / dist.irecv (no batch), waited each step.
def ar_isend_irecv(tensor):
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    if n == 1:
        return tensor
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    b = chunk_bounds(flat.numel(), n)
    incoming = torch.empty(b[0][1] - b[0][0], dtype=flat.dtype)
    for step in range(2 * (n - 1)):
        s, r = b[(rank - step - 1) % n], b[(rank - step - 2) % n]
        if step >= n - 1:                     # the all-gather: step t = step - (n - 1)
            t = step - (n - 1)
            s, r = b[(rank - t) % n], b[(rank - t - 1) % n]
        into = incoming[:r[1] - r[0]] if step < n - 1 else flat[r[0]:r[1]]
        works = [dist.irecv(into, prev), dist.isend(flat[s[0]:s[1]], nxt)]
        for w in works:
            w.wait()
        if step < n - 1:
            flat[r[0]:r[1]] += into
    return tensor


# RIGHT: the reduce-scatter's result as flat.narrow(...) (a view, like slicing).
def rs_narrow(tensor):
    flat, rank, n = tensor.view(-1), dist.get_rank(), dist.get_world_size()
    b = chunk_bounds(flat.numel(), n)
    if n == 1:
        return flat.narrow(0, 0, flat.numel())
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    for step in range(n - 1):
        (s0, s1), (r0, r1) = b[(rank - step - 1) % n], b[(rank - step - 2) % n]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, flat[s0:s1], nxt),
                                         dist.P2POp(dist.irecv, incoming, prev)]):
            w.wait()
        flat.narrow(0, r0, r1 - r0).add_(incoming)
    lo, hi = b[rank]
    return flat.narrow(0, lo, hi - lo)
