"""Lesson 03 (safe_ring_shift, overlapped_step): wrong bodies, and correct ones in another
style."""
import torch
import torch.distributed as dist


def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, (rank + 1) % n, (rank - 1) % n


def shift_not_waited(tensor):
    """Right values, maybe, but it returns before waiting for its receive."""
    _, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                            dist.P2POp(dist.irecv, received, prev)])
    return received


def shift_into_input(tensor):
    """The race of notebook 03: receives into the tensor it is sending."""
    _, nxt, prev = _ring()
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                        dist.P2POp(dist.irecv, tensor, prev)]):
        work.wait()
    return tensor.clone()


def shift_parity_blocking(tensor):
    """Correct: blocking send/recv ordered by parity (a send always meets a receive)."""
    rank, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    if rank % 2 == 0:
        dist.send(tensor, nxt)
        dist.recv(received, prev)
    else:
        dist.recv(received, prev)
        dist.send(tensor, nxt)
    return received


def _post(block, recv_buf):
    _, nxt, prev = _ring()
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                   dist.P2POp(dist.irecv, recv_buf, prev)])


def step_compute_first(block, weight, recv_buf):
    """Right values, no overlap: the matmul runs before the transfers are posted."""
    product = block @ weight
    for work in _post(block, recv_buf):
        work.wait()
    return product


def step_compute_after_wait(block, weight, recv_buf):
    """Right values, no overlap: the transfers are over before the matmul starts."""
    for work in _post(block, recv_buf):
        work.wait()
    return block @ weight


def step_blocking(block, weight, recv_buf):
    """Right values, blocking send/recv (parity-ordered): nothing can overlap them."""
    rank, nxt, prev = _ring()
    if rank % 2 == 0:
        dist.send(block, nxt)
        dist.recv(recv_buf, prev)
    else:
        dist.recv(recv_buf, prev)
        dist.send(block, nxt)
    return block @ weight


def step_isend_irecv(block, weight, recv_buf):
    """Correct: isend and irecv, torch.matmul while they fly (no span), then wait."""
    _, nxt, prev = _ring()
    works = [dist.irecv(recv_buf, prev), dist.isend(block, nxt)]
    product = torch.matmul(block, weight)
    for work in works:
        work.wait()
    return product
