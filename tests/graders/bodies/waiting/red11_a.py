"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow).

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red11_a.py.)
"""

import torch
import torch.distributed as dist


# -- lesson 03: overlapped_step --------------------------------------------------------------

def step_copy_weight_in_flight(block, weight, recv_buf):
    """WRONG (no overlap: while the transfers fly it only copies the weight into a staging
    buffer; it waits, THEN computes block @ staged): the copy_ of the watched weight into a
    plain tensor shows as the compute span, and the real product, on the plain copy, is
    invisible to the trace."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, (rank + 1) % ws),
                                    dist.P2POp(dist.irecv, recv_buf, (rank - 1) % ws)])
    staged = torch.empty(tuple(weight.shape), dtype=block.dtype)
    staged.copy_(weight)
    for w in works:
        w.wait()
    return block @ staged


def shift_halves_as_float32(tensor):
    """WRONG (float16 / bfloat16 tensors travel as float32 and are cast back: twice the
    bytes, not the tensor's own dtype; the contract says any float or integer dtype): the
    grader's shift cases are float32, int64 and float64 only."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    wire = tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor
    out = torch.empty_like(wire)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, (rank + 1) % ws),
                                     dist.P2POp(dist.irecv, out, (rank - 1) % ws)]):
        w.wait()
    return out.to(tensor.dtype)
