"""An all-to-all built from point-to-point: every rank sends chunk j of its tensor to rank
j and receives rank j's chunk for it, in one batch, peers in sorted order, then waits for
every request. Checked against dist.all_to_all_single.

    torchrun --nproc-per-node 3 all_to_all.py
"""
import torch
import torch.distributed as dist


def all_to_all(data, rank, n, chunk):
    """Chunk j of `data` to rank j, in one batch. The P2POps end when this returns: each
    keeps its group (`.group`), and kept past destroy_process_group() they keep it alive."""
    out = torch.empty_like(data)
    out[rank * chunk:(rank + 1) * chunk] = data[rank * chunk:(rank + 1) * chunk]
    ops = []
    for peer in sorted(set(range(n)) - {rank}):
        ops.append(dist.P2POp(dist.isend, data[peer * chunk:(peer + 1) * chunk], peer))
        ops.append(dist.P2POp(dist.irecv, out[peer * chunk:(peer + 1) * chunk], peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return out


dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
chunk = 2
data = torch.arange(n * chunk, dtype=torch.float32) + 100 * rank
out = all_to_all(data, rank, n, chunk)
expected = torch.empty_like(data)
dist.all_to_all_single(expected, data)
assert torch.equal(out, expected), (out, expected)
print(f"rank {rank} result: {out.tolist()}")
dist.destroy_process_group()
