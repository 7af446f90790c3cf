"""Fine on gloo, not on NCCL (three ranks): the doctor predicts, labelled as modelled.

    torchrun --nproc-per-node 3 nccl_only.py

1. The group's first call is a batch between ranks 0 and 1 only.
2. Tags: rank 0 sends tag 1 then tag 2, rank 1 receives tag 2 first (NCCL ignores tags).
3. A receive from any source.
4. A batch of 300 ops: no problem (no op count is a sourced NCCL limit; see
   labs/doctor/portability.py on large batches).
"""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
if rank in (0, 1):
    peer = 1 - rank
    x, y = torch.ones(2), torch.empty(2)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, peer),
                                     dist.P2POp(dist.irecv, y, peer)]):
        w.wait()
dist.barrier()

if rank == 0:
    ops = [dist.P2POp(dist.isend, torch.ones(4), 1, tag=1),
           dist.P2POp(dist.isend, torch.ones(8), 1, tag=2)]
elif rank == 1:
    ops = [dist.P2POp(dist.irecv, torch.empty(8), 0, tag=2),
           dist.P2POp(dist.irecv, torch.empty(4), 0, tag=1)]
if rank in (0, 1):
    for w in dist.batch_isend_irecv(ops):
        w.wait()

if rank == 2:
    dist.recv(torch.empty(3), src=None)
elif rank == 0:
    dist.send(torch.ones(3), dst=2)

if rank in (0, 1):
    peer = 1 - rank
    sends = [dist.P2POp(dist.isend, torch.ones(1), peer) for _ in range(150)]
    recvs = [dist.P2POp(dist.irecv, torch.empty(1), peer) for _ in range(150)]
    for w in dist.batch_isend_irecv(sends + recvs):
        w.wait()
ops = sends = recvs = None      # a P2POp keeps its group: drop them before leaving
dist.barrier()
dist.destroy_process_group()
