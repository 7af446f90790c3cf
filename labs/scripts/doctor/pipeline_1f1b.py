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
    stage = Stage(dist.get_rank(), dist.get_world_size())
    grads = one_f_one_b(stage, m)
    expected = 1.0
    for s in range(stage.rank, stage.n):
        expected *= s + 2
    assert all(torch.equal(g, torch.full(stage.shape, expected)) for g in grads), grads
    print(f"stage {stage.rank}: {len(grads)} backward passes, gradient {expected}")
    dist.destroy_process_group()


class Stage:
    """One pipeline stage: its neighbours, its weight, and the four exchanges of 1F1B."""

    def __init__(self, rank, n):
        self.rank, self.n, self.shape = rank, n, (4,)
        self.prev = rank - 1 if rank > 0 else None
        self.nxt = rank + 1 if rank < n - 1 else None
        self.weight = float(rank + 2)

    def recv_forward(self, i):
        if self.prev is None:
            return torch.full(self.shape, float(i))          # the first stage's input
        return exchange(recvs=[(self.shape, self.prev)])[0]

    def send_forward(self, y):
        exchange(sends=[(y, self.nxt)] if self.nxt is not None else [])

    def send_backward(self, dx):
        exchange(sends=[(dx, self.prev)] if self.prev is not None else [])

    def recv_backward(self):
        return exchange(recvs=[(self.shape, self.nxt)])[0]

    def send_forward_recv_backward(self, y):
        if self.nxt is None:
            return torch.ones(self.shape)                   # the loss's gradient
        return exchange(sends=[(y, self.nxt)], recvs=[(self.shape, self.nxt)])[0]

    def send_backward_recv_forward(self, dx, i):
        if self.prev is None:
            return torch.full(self.shape, float(i))
        return exchange(sends=[(dx, self.prev)], recvs=[(self.shape, self.prev)])[0]


def one_f_one_b(stage, m):
    """Warm-up forwards, the steady 1F1B state, cool-down backwards; the gradients."""
    warmup, grads = min(stage.n - stage.rank - 1, m), []
    for i in range(warmup):
        stage.send_forward(stage.recv_forward(i) * stage.weight)
    x = stage.recv_forward(warmup) if m > warmup else None
    for i in range(m - warmup):
        dx = stage.send_forward_recv_backward(x * stage.weight) * stage.weight
        grads.append(dx)
        if i == m - warmup - 1:
            stage.send_backward(dx)
        else:
            x = stage.send_backward_recv_forward(dx, warmup + i + 1)
    for _ in range(warmup):
        dx = stage.recv_backward() * stage.weight
        grads.append(dx)
        stage.send_backward(dx)
    return grads


if __name__ == "__main__":
    main()
