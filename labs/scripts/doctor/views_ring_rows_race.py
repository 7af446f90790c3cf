"""The same ring all-gather into the rows of one tensor, but it reads the row being
received before the wait: a race on gloo's thread and on NCCL's stream."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world
out = torch.zeros(world, 4)
out[rank] = float(rank)
total = out[rank].sum()
for step in range(world - 1):
    send_row, recv_row = (rank - step) % world, (rank - step - 1) % world
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out[send_row], right),
                                    dist.P2POp(dist.irecv, out[recv_row], left)])
    total += out[recv_row].sum()          # HAZARD: the row being received, before its wait
    for work in works:
        work.wait()
print(f"rank {rank} gathered {out[:, 0].tolist()}")
dist.destroy_process_group()
