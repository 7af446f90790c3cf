"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow).

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red11_a.py.)
"""

import torch
import torch.distributed as dist


# -- lesson 08: fixed_average_gradients ------------------------------------------------------

def fixed_average_half_grads_in_float32(model):
    """WRONG (mixed precision "done safely": float16 / bfloat16 gradients are sent and
    received as float32 copies, averaged in float32 and cast back: twice the bytes on the
    wire, not the gradients themselves): the grader's models are float32 and float64 only,
    so the widened path is never seen; nothing in the contract limits the dtypes."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    wide = [p.grad.float() if p.grad.dtype in (torch.float16, torch.bfloat16) else p.grad
            for p in params]
    peers = [q for q in range(ws) if q != rank]
    inbox = {q: [torch.empty_like(g) for g in wide] for q in peers}
    ops = [dist.P2POp(dist.isend, g, q) for q in peers for g in wide] + \
        [dist.P2POp(dist.irecv, b, q) for q in peers for b in inbox[q]]
    for w in (dist.batch_isend_irecv(ops) if ops else []):
        w.wait()
    for k, p in enumerate(params):
        total = wide[k] + sum(inbox[q][k] for q in peers) if peers else wide[k].clone()
        p.grad = (total / ws).to(p.grad.dtype)
