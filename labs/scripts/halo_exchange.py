"""Exercise (lesson 12, section 8): a halo exchange the doctor finds four kinds of problem in.

Every rank holds CELLS values of a periodic 1-D field (rank r's cells follow rank r - 1's,
the last rank's wrap to rank 0's). Each step smooths the field: a cell becomes the mean of
itself and its two neighbours, so a rank needs one value from each neighbouring rank (its
"halo") before it can update its edges. After STEPS steps every rank prints its cells.

It gives the right numbers on gloo, yet it is wrong. Run the doctor on it,

    .venv/bin/python -m labs.doctor --nproc-per-node 3 labs/scripts/halo_exchange.py

fix what it reports (the lesson of each problem is named in the report), and run it again
until the report says "no problems found on gloo; none predicted on NCCL", with the same
printed numbers, on 2, 3 and 4 ranks. Keep the method: every step, each rank sends one edge
value to each neighbour and receives one from each, point to point. Grade it:

    .venv/bin/python -m pytest --impl=labs tests/graders/test_doctor.py
"""
import torch
import torch.distributed as dist

CELLS, STEPS = 6, 3

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
left, right = (rank - 1) % world, (rank + 1) % world
u = torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * rank    # this rank's cells

for step in range(STEPS):
    from_left, from_right = torch.empty(1, dtype=u.dtype), torch.empty(1, dtype=u.dtype)
    dist.isend(u[:1], left)              # my first cell: the right halo of my left neighbour
    dist.isend(u[-1:], right)            # my last cell: the left halo of my right neighbour
    dist.recv(from_right, right)
    dist.recv(from_left, left)
    padded = torch.cat([from_left, u, from_right])
    u.copy_((padded[:-2] + padded[1:-1] + padded[2:]) / 3)

print(f"rank {rank}: " + " ".join(f"{x:.6f}" for x in u.tolist()))
dist.destroy_process_group()
