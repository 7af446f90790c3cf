"""Round 15 (ours), part 4: bodies right on a launch's first calls that change after a few
(the grader's first cases, or its call-twice check, see only the honest ones)."""
import torch
import torch.distributed as dist

from tests.graders.bodies.red14_styles import ar_isend_irecv as _ring

_CALLS = {"n": 0}


# WRONG: the ring for the first 5 calls of a launch, gloo's all_reduce after.
def ar_builtin_after_five(tensor):
    _CALLS["n"] += 1
    if _CALLS["n"] > 5:
        dist.all_reduce(tensor)
        return tensor
    return _ring(tensor)


# WRONG: after 3 calls the sends are no longer waited for.
def batched_stops_waiting_sends(tensor, peer):
    _CALLS["n"] += 1
    received = torch.empty_like(tensor)
    send, recv = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                         dist.P2POp(dist.irecv, received, peer)])
    recv.wait()
    if _CALLS["n"] <= 3:
        send.wait()
    return received
