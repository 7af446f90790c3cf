"""The fixed twin of tags_out_of_order.py: the receives are posted in the order of the
sends, so NCCL's pairing by order gives what gloo's pairing by tag gives.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/tags_in_order.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
first, second = torch.ones(4), torch.full((4,), 2.0)
if rank == 0:
    reqs = [dist.isend(first, 1, tag=1), dist.isend(second, 1, tag=2)]
elif rank == 1:
    reqs = [dist.irecv(first, 0, tag=1), dist.irecv(second, 0, tag=2)]
else:
    reqs = []
for req in reqs:
    req.wait()
print(f"rank {rank}: {first[0].item():.0f} {second[0].item():.0f}")
dist.destroy_process_group()
