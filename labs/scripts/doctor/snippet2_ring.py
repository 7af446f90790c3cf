"""Lesson 08's snippet 2, the one-shift "ring all-reduce", as a script (four ranks):

    torchrun --nproc-per-node 4 snippet2_ring.py

It sends and receives the same tensor, and waits with a barrier instead of wait().
"""
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    send_op = dist.P2POp(dist.isend, tensor, (rank + 1) % world_size)
    recv_op = dist.P2POp(dist.irecv, tensor, (rank - 1 + world_size) % world_size)
    reqs = dist.batch_isend_irecv([send_op, recv_op])
    dist.barrier()
    return tensor


dist.init_process_group("gloo")
result = ring_all_reduce(torch.tensor([dist.get_rank() + 1.0]))
print(f"rank {dist.get_rank()} result: {result.item()}")
dist.destroy_process_group()
