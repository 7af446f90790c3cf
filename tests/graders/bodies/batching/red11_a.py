"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow).

(Lesson `batching`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red11_a.py.)
"""

import torch
import torch.distributed as dist


# -- lesson 02: exchange_with_neighbours -----------------------------------------------------

_NARROW_INTS = (torch.int8, torch.uint8, torch.int16, torch.int32)


def neighbours_widen_small_ints(tensor):
    """WRONG (a defensive copy from a forum answer, "gloo and small integer types": int8,
    uint8, int16 and int32 tensors travel as int64 and are narrowed on arrival: two to eight
    times the bytes, not the tensor's own dtype; the contract says any dtype): the grader's
    cases have no 8/16/32-bit integer tensor, so the widened path is never seen."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    wire = tensor.to(torch.int64) if tensor.dtype in _NARROW_INTS else tensor
    left, right = (rank - 1) % ws, (rank + 1) % ws
    from_left, from_right = torch.empty_like(wire), torch.empty_like(wire)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, left),
                                     dist.P2POp(dist.isend, wire, right),
                                     dist.P2POp(dist.irecv, from_left, left),
                                     dist.P2POp(dist.irecv, from_right, right)]):
        w.wait()
    return from_left.to(tensor.dtype), from_right.to(tensor.dtype)
