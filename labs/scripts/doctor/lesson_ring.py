"""Lesson 05's reference ring all-reduce (solutions/ring.py) as a torchrun script:

    torchrun --nproc-per-node 4 lesson_ring.py

Every rank holds [10r, 10r + 1, ...] and checks it ends with the sum over ranks.
"""
import torch
import torch.distributed as dist

from solutions.ring import ring_all_reduce

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
tensor = torch.arange(10.0) + 10 * rank
expected = n * torch.arange(10.0) + 10 * sum(range(n))
ring_all_reduce(tensor)
assert torch.equal(tensor, expected), (tensor, expected)
print(f"rank {rank} result: {tensor.tolist()}")
dist.destroy_process_group()
