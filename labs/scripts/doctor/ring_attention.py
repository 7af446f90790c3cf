"""Ring attention's K/V rotation (as ring-flash-attention does it):

    torchrun --nproc-per-node 4 ring_attention.py

Each rank holds a block of queries, keys and values. For world_size steps it attends to
the K/V block it holds while the next block travels: one batch sends K and V to the next
rank and receives the previous rank's into FRESH buffers (never the ones being sent),
then waits, then swaps. The result is checked against attention over the whole sequence.
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
block, dim = 3, 8
q_all, k_all, v_all = (torch.randn(n * block, dim) for _ in range(3))
mine = slice(rank * block, (rank + 1) * block)
q, k, v = q_all[mine].clone(), k_all[mine].clone(), v_all[mine].clone()
nxt, prev = (rank + 1) % n, (rank - 1) % n

scores, values = [], []
for step in range(n):
    works = []
    if step < n - 1:
        k_next, v_next = torch.empty_like(k), torch.empty_like(v)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                        dist.P2POp(dist.isend, v, nxt),
                                        dist.P2POp(dist.irecv, k_next, prev),
                                        dist.P2POp(dist.irecv, v_next, prev)])
    scores.append(q @ k.T / dim ** 0.5)     # reads K and V while they are being sent: fine
    values.append(v.clone())
    for work in works:
        work.wait()
    if step < n - 1:
        k, v = k_next, v_next

out = torch.softmax(torch.cat(scores, dim=1), dim=1) @ torch.cat(values)
reference = torch.softmax(q @ k_all.T / dim ** 0.5, dim=1)
# The blocks arrived in the order rank, rank-1, ...: reorder the reference's columns.
order = [(rank - s) % n for s in range(n)]
cols = torch.cat([torch.arange(b * block, (b + 1) * block) for b in order])
expected = reference[:, cols] @ v_all[cols]
assert torch.allclose(out, expected, atol=1e-5)
print(f"rank {rank}: attention over {n * block} keys matches")
dist.destroy_process_group()
