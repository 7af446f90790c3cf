"""A script that never calls init_process_group: the doctor has nothing to check (exit 2).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/nccl/no_group.py
"""
import torch

print(torch.ones(3).sum().item())
