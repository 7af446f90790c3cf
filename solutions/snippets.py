"""Reference solution for lesson 08 (labs/snippets.py)."""
import torch
import torch.distributed as dist


def fixed_average_gradients(model):
    """One batch: to every other rank, an isend of each gradient and an irecv into a fresh
    buffer, in parameter order (two ranks' messages match FIFO); wait for all; average."""
    world_size, rank = dist.get_world_size(), dist.get_rank()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [peer for peer in range(world_size) if peer != rank]
    received = {peer: [torch.empty_like(g) for g in grads] for peer in peers}
    ops = []
    for peer in peers:
        for grad, buf in zip(grads, received[peer]):
            ops.append(dist.P2POp(dist.isend, grad, peer))
            ops.append(dist.P2POp(dist.irecv, buf, peer))
    for req in dist.batch_isend_irecv(ops) if ops else []:
        req.wait()
    for k, param in enumerate(params):
        total = grads[k].clone()
        for peer in peers:
            total += received[peer][k]
        param.grad = total / world_size
