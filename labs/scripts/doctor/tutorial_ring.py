"""The ring all-reduce of PyTorch's distributed tutorial before its fix
(pytorch/pytorch#31572, fixed by pytorch/tutorials#1039), as a script:

    torchrun --nproc-per-node 2 tutorial_ring.py

Every rank holds [rank + 1] * 3; a correct all-reduce gives every rank the sum. The
tutorial's loop adds `recv` (the output, still zeros) instead of the buffer it just
received, and never copies `send` into `send_buff`: the result is not the sum.
"""
import torch
import torch.distributed as dist


def allreduce(send, recv):
    """Implementation of a ring-reduce with addition, as the tutorial printed it."""
    rank = dist.get_rank()
    size = dist.get_world_size()
    send_buff = torch.zeros(send.size())
    recv_buff = torch.zeros(send.size())
    accum = torch.zeros(send.size())
    accum[:] = send[:]

    left = ((rank - 1) + size) % size
    right = (rank + 1) % size

    for i in range(size - 1):
        if i % 2 == 0:
            # Send send_buff
            send_req = dist.isend(send_buff, right)
            dist.recv(recv_buff, left)
            accum[:] += recv[:]
        else:
            # Send recv_buff
            send_req = dist.isend(recv_buff, right)
            dist.recv(send_buff, left)
            accum[:] += send[:]
        send_req.wait()
    recv[:] = accum[:]


dist.init_process_group("gloo")
data = torch.ones(3) * (dist.get_rank() + 1)
recv = torch.zeros_like(data)
allreduce(send=data, recv=recv)
print(f"rank {dist.get_rank()} result: {recv.tolist()}")
dist.destroy_process_group()
