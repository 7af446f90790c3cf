"""Ring attention as GPU code writes it (ring-flash-attention's RingComm, context parallel):

    torchrun --nproc-per-node 4 ring_attention_cuda.py         # on GPUs, NCCL
    python -m labs.doctor --nproc-per-node 4 ring_attention_cuda.py    # here, unmodified

Each rank holds a block of the sequence's queries, keys and values. For world_size steps it
attends to the K/V block it holds while the next block travels on a side stream: one
batch_isend_irecv per step sends K and V to the next rank and receives the previous rank's
into fresh buffers; every Work is waited before the next block is read. The blocks are
merged with an online softmax (log-sum-exp) and the result checked against full attention.
Run with `--bug` to read the next block before its wait (the twin the doctor names).
"""
import os
import sys

import torch
import torch.distributed as dist

BUG = "--bug" in sys.argv


class RingComm:
    """K/V to the next rank, from the previous one, one batch per step."""

    def __init__(self):
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.send_rank = (self.rank + 1) % self.world_size
        self.recv_rank = (self.rank - 1) % self.world_size
        self._ops, self._reqs = [], None

    def send_recv(self, to_send):
        res = torch.empty_like(to_send)
        self._ops.append(dist.P2POp(dist.isend, to_send, self.send_rank))
        self._ops.append(dist.P2POp(dist.irecv, res, self.recv_rank))
        return res

    def commit(self):
        self._reqs = dist.batch_isend_irecv(self._ops)

    def wait(self):
        for req in self._reqs:
            req.wait()
        self._reqs, self._ops = None, []


def block_attention(q, k, v, out, lse):
    """Attend to one K/V block and merge it into (out, lse), as flash-attention's
    forward does across blocks."""
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    block_lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    block_out = torch.softmax(scores, dim=-1) @ v
    if out is None:
        return block_out, block_lse
    new_lse = torch.logaddexp(lse, block_lse)
    return out * torch.exp(lse - new_lse) + block_out * torch.exp(block_lse - new_lse), new_lse


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    block, dim = 4, 16
    q_all, k_all, v_all = (torch.randn(n * block, dim, device="cuda") for _ in range(3))
    mine = slice(rank * block, (rank + 1) * block)
    q, k, v = q_all[mine].clone(), k_all[mine].clone(), v_all[mine].clone()

    comm, comm_stream = RingComm(), torch.cuda.Stream()
    out = lse = None
    for step in range(n):
        if step + 1 != n:
            comm_stream.wait_stream(torch.cuda.current_stream())   # K, V are ready
            with torch.cuda.stream(comm_stream):
                next_k, next_v = comm.send_recv(k), comm.send_recv(v)
                comm.commit()
        if BUG and step + 1 != n:
            k, v = next_k, next_v                # the next block, read before its wait
        out, lse = block_attention(q, k, v, out, lse)
        if step + 1 != n:
            comm.wait()
            k, v = next_k, next_v
    torch.cuda.synchronize()

    expected = torch.softmax(q @ k_all.T / dim ** 0.5, dim=-1) @ v_all
    ok = torch.allclose(out, expected, atol=1e-5)
    print(f"rank {rank}: ring attention over {n * block} keys "
          f"{'matches' if ok else 'DIFFERS from'} full attention")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
