"""WRONG: both functions ignore their peer argument and use rank +/- 1."""
import torch
import torch.distributed as dist


def _swap(t, peer):
    got = torch.empty_like(t)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, t.detach().contiguous(), peer),
                                     dist.P2POp(dist.irecv, got, peer)]):
        w.wait()
    return got


def send_forward_recv_backward(output, next_rank):
    return _swap(output, dist.get_rank() + 1)


def send_backward_recv_forward(input_grad, prev_rank):
    return _swap(input_grad, dist.get_rank() - 1)
