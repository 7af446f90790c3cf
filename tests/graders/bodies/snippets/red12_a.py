"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...).

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_a.py.)
"""

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


# -- lesson 08: fixed_average_gradients -----------------------------------------------------------

def _exchange_grads(grads):
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = []
    for p in peers:
        for g, b in zip(grads, received[p]):
            ops += [dist.P2POp(dist.isend, g, p), dist.P2POp(dist.irecv, b, p)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return received


# WRONG: sends and receives everything, but leaves a gradient that is all zero on THIS rank
# as it is ("nothing to average"): the mean is (0 + the others) / W, not 0. The grader's
# models (tanh MLP, Linear) never give a rank an all-zero gradient; a dead ReLU, an unused
# embedding row or a frozen branch on one rank's batch does.
def fixed_average_keeps_zero_grads(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        if not bool(grads[k].any()):
            continue                                 # "zero: nothing to average"
        total = grads[k].clone()
        for bufs in received.values():
            total += bufs[k]
        p.grad = total / ws


# RIGHT: the same exchange; the mean accumulated in float64 and cast back to the gradient's
# dtype (more precise than adding in float16 / bfloat16; messages stay in the own dtype).
def fixed_average_float64_accumulator(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        total = grads[k].double()
        for bufs in received.values():
            total = total + bufs[k].double()
        p.grad = (total / ws).to(grads[k].dtype)


# -- more of lesson 08: precision that depends on the values --------------------------------------

# WRONG: float16 gradients summed in bfloat16 ("bfloat16 has float32's range: no overflow")
# and cast back: bfloat16 keeps 8 significant bits where float16 keeps 11, so the mean loses
# 3 bits; the grader's tolerance for float16 (2e-3) is wider than that loss on its small
# Linear(4, 3) gradients.
def fixed_average_f16_summed_in_bf16(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        wide = torch.bfloat16 if grads[k].dtype == torch.float16 else grads[k].dtype
        total = grads[k].to(wide)
        for bufs in received.values():
            total = total + bufs[k].to(wide)
        p.grad = (total / ws).to(grads[k].dtype)


# WRONG: bfloat16 gradients averaged through float16 ("more mantissa bits"): any gradient
# or sum above 65504 becomes inf, which bfloat16 holds fine; the grader's gradients are all
# small, so the float16 detour is exact enough there.
def fixed_average_bf16_through_half(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        acc = torch.float16 if grads[k].dtype == torch.bfloat16 else grads[k].dtype
        total = grads[k].to(acc)
        for bufs in received.values():
            total = total + bufs[k].to(acc)
        p.grad = (total / ws).to(grads[k].dtype)


# WRONG: clamps the mean to +-1e4 "against overflow": a large gradient is silently cut.
# The grader's gradients are all small.
def fixed_average_clamped(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        total = grads[k].clone()
        for bufs in received.values():
            total += bufs[k]
        p.grad = torch.clamp(total / ws, -1e4, 1e4)
