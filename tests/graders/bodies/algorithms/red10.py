"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import torch.distributed as dist


def tree_broadcast_children_together(tensor, src):
    """RIGHT: the binomial tree of the hint (same parent, same children), the child sends
    posted together in one batch_isend_irecv and waited together (MPI's isend + waitall)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.irecv(tensor, src=(v - (1 << (v.bit_length() - 1)) + src) % p).wait()
    children, m = [], 1 << v.bit_length()
    while v + m < p:
        children.append((v + m + src) % p)
        m <<= 1
    if children:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, c) for c in children]):
            w.wait()
    return tensor


def tree_broadcast_recursive(tensor, src):
    """RIGHT: the same tree written recursively on relative ranks (a helper that returns the
    children list), blocking recv from the parent, blocking sends in ascending order."""
    rank, p = dist.get_rank(), dist.get_world_size()

    def kids(v, m):
        return [] if v + m >= p else [v + m] + kids(v, m * 2)
    v = (rank - src) % p
    if v:
        top = 1 << (v.bit_length() - 1)
        dist.recv(tensor, src=(v - top + src) % p)
    for c in kids(v, 1 << v.bit_length()):
        dist.send(tensor, dst=(c + src) % p)
    return tensor
