"""Round 15 (ours), part 4: bodies right on a launch's first calls that change after a few
(the grader's first cases, or its call-twice check, see only the honest ones).

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_late.py.)
"""
import torch
import torch.distributed as dist


_CALLS = {"n": 0}


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
