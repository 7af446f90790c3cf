"""A request/reply server: rank 0 answers each worker's request in the order they arrive,
receiving from any source (dist.recv(src=None) returns the sender). Correct on gloo; NCCL has
no any-source receive, which is its only problem: the requests and replies need no batch
(each worker's reply comes after its request, whatever order rank 0 serves them in).

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/groups_any_source_reply.py
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
if rank == 0:
    for _ in range(world - 1):
        request = torch.empty(2)
        src = dist.recv(request, src=None)                     # whoever asks first
        dist.send(request * 10, src)
else:
    request, reply = torch.tensor([float(rank), 1.0]), torch.empty(2)
    sent = dist.isend(request, 0)
    dist.recv(reply, 0)
    sent.wait()
    assert reply.tolist() == [10.0 * rank, 10.0], reply
dist.destroy_process_group()
