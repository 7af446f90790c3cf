"""Round 14 (ours): more bodies for the two graders touched last round (overlapped_step,
fixed_average_gradients), in the three kinds left unwritten: another collective doing the
transfer, a request left unwaited (or waited after the call returns), and a buffer the body
keeps, so that the next call overwrites what this one returned.

(Lesson `waiting`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_more.py.)
"""
import threading

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring

_KEPT: dict = {}       # buffers a body keeps between calls, by (name, shape, dtype)


def _kept(name, like):
    key = (name, tuple(like.shape), like.dtype)
    if key not in _KEPT:
        _KEPT[key] = torch.empty_like(like)
    return _KEPT[key]


def _post(block, recv_buf):
    nxt, prev = _ring()
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                   dist.P2POp(dist.irecv, recv_buf, prev)])


# ----------------------------------------------------------------------------------------
# overlapped_step
# ----------------------------------------------------------------------------------------

# WRONG: the transfer as an asynchronous all_gather ("it overlaps just the same").
def step_all_gather_async(block, weight, recv_buf):
    ws, (_, prev) = dist.get_world_size(), _ring()
    gathered = [torch.empty_like(block) for _ in range(ws)]
    work = dist.all_gather(gathered, block, async_op=True)
    product = block @ weight
    work.wait()
    recv_buf.copy_(gathered[prev])
    return product


# WRONG: only the receive is waited ("the send is done when the receive is").
def step_send_never_waited(block, weight, recv_buf):
    send, recv = _post(block, recv_buf)
    product = block @ weight
    recv.wait()
    return product


# WRONG: the requests waited by a timer thread, after the call has returned.
def step_waited_after_return(block, weight, recv_buf):
    works = _post(block, recv_buf)
    product = block @ weight
    threading.Timer(0.2, lambda: [w.wait() for w in works]).start()
    return product


# WRONG: the product written into a buffer kept per shape, returned as is: the next call
# of the same shape overwrites what this one returned.
def step_product_in_kept_buffer(block, weight, recv_buf):
    works = _post(block, recv_buf)
    out = _kept("product", block[:, :1].expand(-1, weight.shape[1]))
    torch.matmul(block, weight, out=out)
    for work in works:
        work.wait()
    return out


# WRONG: the transfer as a functional collective (a permutation of the ranks' blocks).
def step_functional_permute(block, weight, recv_buf):
    from torch.distributed import _functional_collectives as funcol
    ws = dist.get_world_size()
    moved = funcol.permute_tensor(block.reshape(-1), [(r + 1) % ws for r in range(ws)],
                                  dist.group.WORLD)      # splits by numel: flat tensors
    product = block @ weight
    recv_buf.copy_(funcol.wait_tensor(moved).view_as(recv_buf))
    return product
