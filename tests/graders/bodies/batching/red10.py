"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import torch
import torch.distributed as dist


def ring_shift_copy_plus_zero(tensor, k):
    """WRONG (the whole-turn "copy" is `tensor + 0`: a bool mask comes back as int64, a new
    dtype): the grader's cases never use bool (nor complex, bfloat16), so it is not seen."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor + 0
    out = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
                                     dist.P2POp(dist.irecv, out, (rank - k) % ws)]):
        w.wait()
    return out


def ring_shift_recv_first(tensor, k):
    """RIGHT: k normalised with divmod, receive posted first in the batch, a copy via
    torch.clone(..., memory_format=contiguous) when the shift is a whole turn."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    _, k = divmod(k, ws)
    if not k:
        return torch.clone(tensor, memory_format=torch.contiguous_format)
    out = torch.zeros_like(tensor)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, (rank - k) % ws),
                                   dist.P2POp(dist.isend, tensor, (rank + k) % ws)])
    while reqs:
        reqs.pop().wait()
    return out
