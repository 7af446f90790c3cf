"""A ring all-gather into the rows of one tensor: each step sends the row received last and
receives the next row, while the rank reads the rows it already has. Correct on gloo and on
NCCL: only the row being received is in flight, and nothing reads it before its wait."""
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
    total += out[send_row].sum()          # a row that is not being received: fine
    for work in works:
        work.wait()
assert out[:, 0].tolist() == [float(r) for r in range(world)], out
print(f"rank {rank} gathered {out[:, 0].tolist()}")
dist.destroy_process_group()
