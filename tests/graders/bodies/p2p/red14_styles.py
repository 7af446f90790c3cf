"""Round 14 (ours): correct bodies in styles a learner picks from other sources (blocking
calls in pairs, one isend/irecv per call, forwards waited at the end, torch's own flatten
helpers), where the contract leaves the style free: each must pass.

(Lesson `p2p`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_styles.py.)
"""
import torch
import torch.distributed as dist



# RIGHT: ping-pong with isend / irecv, each waited at once (the same rendezvous).
def ping_pong_isend_irecv(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank > 1:
        return None
    out, seconds, current = [], [], tensor
    for _ in range(rounds):
        buf = torch.empty_like(tensor)
        if rank == 0:
            t0 = time.perf_counter()
            dist.isend(current, 1).wait()
            dist.irecv(buf, 1).wait()
            seconds.append(time.perf_counter() - t0)
            out.append(buf)
            current = buf
        else:
            dist.irecv(buf, 0).wait()
            out.append(buf)
            dist.isend(buf + 1, 0).wait()
    return (out, seconds) if rank == 0 else out


# RIGHT: the token with a tag of its own on every message, the last rank sending first
# being impossible (it has nothing yet): 0 sends, the others receive, add, forward.
def pass_token_tagged(token):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    held = torch.zeros_like(token)
    if rank == 0:
        dist.send(token.clone(), (rank + 1) % ws, tag=7)
        dist.recv(held, (rank - 1) % ws, tag=7)
        return held
    dist.recv(held, (rank - 1) % ws, tag=7)
    held.add_(rank)
    dist.send(held, (rank + 1) % ws, tag=7)
    return held
