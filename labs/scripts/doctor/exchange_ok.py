"""Two ranks swap a tensor in one batch: correct on gloo and on NCCL."""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
peer = 1 - rank
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                dist.P2POp(dist.irecv, theirs, peer)])
for work in works:
    work.wait()
print(f"rank {rank} got {theirs[0].item()}")
dist.destroy_process_group()
