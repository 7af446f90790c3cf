"""Eighth round, ours: gradient averages that call lesson 05's ring as the plan says, or
exchange whole gradients, yet move their data some other way (the sums probe and the
method's partners must see it), and right ones that look unusual.

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red8_gradients.py.)
"""
import torch
import torch.distributed as dist



def fixed_average_relayed(model):
    """W: every gradient travels around the ring, each rank passing on what it received
    (an all-gather by relay): the right mean, but not one message to every other rank."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    totals = [g.clone() for g in grads]
    passing = [g.clone() for g in grads]
    for _ in range(n - 1):
        arriving = [torch.empty_like(g) for g in grads]
        ops = [op for out, into in zip(passing, arriving)
               for op in (dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, into, prev))]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        for total, got in zip(totals, arriving):
            total += got
        passing = arriving
    for param, total in zip(params, totals):
        param.grad = total / n


def fixed_average_doubled_wire(model):
    """W: the reference's exchange with every gradient doubled on the wire and halved on
    arrival: bit-exact means (a power of two), other values sent."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    sent = [p.grad * 2 for p in params]
    peers = [peer for peer in range(n) if peer != rank]
    received = {peer: [torch.empty_like(g) for g in sent] for peer in peers}
    ops = [op for peer in peers for g, buf in zip(sent, received[peer])
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, buf, peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    for k, param in enumerate(params):
        total = param.grad.clone()
        for peer in peers:
            total += received[peer][k] / 2
        param.grad = total / n


def fixed_average_peers_descending(model):
    """R: the reference's exchange, peers visited from the highest rank down (every pair
    still posts its messages in the same parameter order: FIFO matches them)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    peers = [peer for peer in reversed(range(n)) if peer != rank]
    received = {peer: [torch.empty_like(p.grad) for p in params] for peer in peers}
    ops = [op for peer in peers for p, buf in zip(params, received[peer])
           for op in (dist.P2POp(dist.isend, p.grad, peer), dist.P2POp(dist.irecv, buf, peer))]
    for work in dist.batch_isend_irecv(ops) if ops else []:
        work.wait()
    for k, param in enumerate(params):
        total = param.grad.clone()
        for peer in sorted(peers):
            total += received[peer][k]
        param.grad = total / n
