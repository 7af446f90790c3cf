"""A pipeline-parallel 1F1B schedule (one forward, one backward), as Megatron-LM and
picotron exchange activations and gradients between neighbouring stages:

    torchrun --nproc-per-node 4 pipeline_1f1b.py --microbatches 4

Each stage multiplies by its weight going forward and by it again going backward. In the
steady state a stage sends its activation forward and receives a gradient from the next
stage in ONE batch_isend_irecv (send_forward_recv_backward): neighbouring stages send to
each other at the same moment, and only a batch is safe on every backend.
"""
import argparse

import torch
import torch.distributed as dist


def exchange(sends=(), recvs=()):
    """One batch: isend each (tensor, peer), irecv each (shape, peer); wait all."""
    ops = [dist.P2POp(dist.isend, t, peer) for t, peer in sends]
    got = [torch.empty(shape) for shape, _ in recvs]
    ops += [dist.P2POp(dist.irecv, t, peer) for t, (_, peer) in zip(got, recvs)]
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    return got


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--microbatches", type=int, default=4)
    m = parser.parse_args().microbatches
    dist.init_process_group("gloo")
    stage, n = dist.get_rank(), dist.get_world_size()
    prev, nxt = (stage - 1 if stage > 0 else None), (stage + 1 if stage < n - 1 else None)
    weight, shape = float(stage + 2), (4,)

    def recv_forward(i):
        return [torch.full(shape, float(i))] if prev is None else exchange(recvs=[(shape, prev)])

    def forward(x):
        return x * weight

    def backward(g):
        return g * weight

    def send_forward_recv_backward(y):
        if nxt is None:
            return [torch.ones(shape)]                      # the loss's gradient
        return exchange(sends=[(y, nxt)], recvs=[(shape, nxt)])

    def send_backward_recv_forward(dx, i):
        if prev is None:
            return [torch.full(shape, float(i))]
        return exchange(sends=[(dx, prev)], recvs=[(shape, prev)])

    warmup = min(n - stage - 1, m)
    grads = []
    for i in range(warmup):
        y = forward(recv_forward(i)[0])
        exchange(sends=[(y, nxt)] if nxt is not None else [])
    x = recv_forward(warmup)[0] if m > warmup else None
    for i in range(m - warmup):
        g = send_forward_recv_backward(forward(x))[0]
        dx = backward(g)
        grads.append(dx)
        if i == m - warmup - 1:
            exchange(sends=[(dx, prev)] if prev is not None else [])
        else:
            x = send_backward_recv_forward(dx, warmup + i + 1)[0]
    for _ in range(warmup):
        g = exchange(recvs=[(shape, nxt)])[0]
        dx = backward(g)
        grads.append(dx)
        exchange(sends=[(dx, prev)] if prev is not None else [])
    expected = 1.0
    for s in range(stage, n):
        expected *= s + 2
    assert all(torch.equal(g, torch.full(shape, expected)) for g in grads), grads
    print(f"stage {stage}: {len(grads)} backward passes, gradient {expected}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
