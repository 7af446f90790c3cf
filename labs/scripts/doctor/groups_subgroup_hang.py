"""A hang through a subgroup's collective (three ranks or more): ranks 0 and 1 reduce on
their own group, then every rank joins a barrier of the whole world, except that rank 1
first waits for a message rank 2 only sends after the barrier. Ranks 1 and 2 wait for each
other. Collectives count per group: rank 1's all_reduce on the group of ranks [0, 1] is not
the world's barrier, so the doctor names the cycle (rank 1's recv, rank 2's barrier).

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/groups_subgroup_hang.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
pair = dist.new_group([0, 1])
if rank in (0, 1):
    dist.all_reduce(torch.ones(1), group=pair)
if rank == 1:
    dist.recv(torch.empty(1), 2)                 # waits for rank 2 ...
dist.barrier()                                   # ... which is here, waiting for rank 1
if rank == 2:
    dist.send(torch.ones(1), 1)
dist.destroy_process_group()
