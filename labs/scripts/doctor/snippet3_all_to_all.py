"""Lesson 08's snippet 3, "all-to-all gradient averaging", as a script (three ranks):

    torchrun --nproc-per-node 3 snippet3_all_to_all.py

A parameter index used as a rank, more receives than sends, a barrier instead of wait(),
and an average of buffers that may never have been written. (The model's three weights have
the same size, so no receive is smaller than its message: with a model whose gradients
differ in size, gloo would also abort a rank.)
"""
import torch
import torch.distributed as dist
import torch.nn as nn


def average_gradients(model):
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    recv_grads = [torch.empty_like(g) for g in grads]
    ops = []
    for i in range(world_size):
        for j in range(world_size):
            if i != j:
                if rank == i:
                    ops.append(dist.P2POp(dist.isend, grads[j], j))
                else:
                    ops.append(dist.P2POp(dist.irecv, recv_grads[j], i))
    reqs = dist.batch_isend_irecv(ops)
    dist.barrier()                      # synchronise before averaging
    for k in range(len(grads)):
        grads[k] /= world_size
        grads[k].add_(recv_grads[k])
    for param, grad in zip(params, grads):
        param.grad = grad


dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.ReLU(), nn.Linear(2, 2, bias=False),
                      nn.ReLU(), nn.Linear(2, 2, bias=False))
model(torch.randn(8, 2)).sum().backward()
average_gradients(model)
dist.destroy_process_group()
