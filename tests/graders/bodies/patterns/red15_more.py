"""Round 15 (ours), part 2: lessons 04, 06 and 09, in kinds no list named (every dtype in
one float64 ring, DDP's first bucket, buckets in forward order, k and v in one message,
shapes compared by numel), and right bodies in styles the contracts allow.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_more.py.)
"""
import torch
import torch.distributed as dist



# ---- lesson 09 ------------------------------------------------------------------------

# WRONG: k and v concatenated into one message each way ("fewer messages").
def rotate_kv_one_message(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    both = torch.cat([k.reshape(-1), v.reshape(-1)])
    incoming = torch.empty_like(both)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, both, nxt),
                                    dist.P2POp(dist.irecv, incoming, prev)])
    k_next = incoming[:k.numel()].view(k.shape)
    v_next = incoming[k.numel():].view(v.shape)
    return k_next, v_next, works


# RIGHT: sends copies of k and v (the caller may then touch k and v at once).
def rotate_kv_sends_copies(k, v):
    ws, rank = dist.get_world_size(), dist.get_rank()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k.clone(), nxt),
                                    dist.P2POp(dist.isend, v.clone(), nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works
