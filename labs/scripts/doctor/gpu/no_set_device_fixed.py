"""The fixed twin of no_set_device.py: each rank sets its own GPU first
(torch.cuda.set_device(local_rank)), as torch's batch_isend_irecv docstring asks for NCCL.
A clean bill at any world size. Run with `--device-id` to pass device_id to
init_process_group instead (NCCL's eager init on that device): clean too.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/gpu/no_set_device_fixed.py
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    if "--device-id" in sys.argv:
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = torch.full((4,), float(rank), device="cuda")
    theirs = torch.empty(4, device="cuda")
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, (rank + 1) % world),
                                    dist.P2POp(dist.irecv, theirs, (rank - 1) % world)])
    for work in works:
        work.wait()
    torch.cuda.synchronize()
    print(f"rank {rank} got {theirs[0].item():.0f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
