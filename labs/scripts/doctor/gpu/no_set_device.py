"""NCCL hazard: a GPU script that never sets its device. Every rank's tensors go to the
current device, cuda:0, and NCCL refuses two ranks of one communicator on one GPU
("Duplicate GPU detected"); torch's batch_isend_irecv docstring warns of hangs. On gloo it
runs fine. Fixed twin: no_set_device_fixed.py (torch.cuda.set_device(local_rank)).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/gpu/no_set_device.py
"""
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = torch.full((4,), float(rank), device="cuda")      # cuda:0 on every rank
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
