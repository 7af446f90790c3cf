"""A GPU script with a CPU fallback, as real code has one: it picks its backend with
dist.is_nccl_available(), then asks dist.get_backend() and its tensor (is_cuda, is_cpu,
device.type, get_device(), type()) which path to take, and prints the path it took. On GPUs it takes
the GPU path; the doctor must check that path, not the CPU one.

    python -m labs.doctor --nproc-per-node 3 paths_backend.py          # clean
    python -m labs.doctor --nproc-per-node 3 paths_backend.py --bug    # the GPU path's bug

--bug: the GPU path unpacks batch_isend_irecv's list into one name per op. NCCL returns one
Work for the whole batch, so that line raises on GPUs; the CPU path never runs it.
"""
import os
import sys

import torch
import torch.distributed as dist


def shift_gpu(x, rank, n, bug):
    """Send to the next rank, receive from the previous one: one batch."""
    out = torch.empty_like(x)
    ops = [dist.P2POp(dist.isend, x, (rank + 1) % n), dist.P2POp(dist.irecv, out, (rank - 1) % n)]
    if bug:
        send, recv = dist.batch_isend_irecv(ops)      # two names for NCCL's one Work
        send.wait()
        recv.wait()
    else:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    return out


def shift_cpu(x, rank, n):
    """The CPU fallback: blocking calls, even ranks send first."""
    out = torch.empty_like(x)
    if rank % 2 == 0:
        dist.send(x, (rank + 1) % n)
        dist.recv(out, (rank - 1) % n)
    else:
        dist.recv(out, (rank - 1) % n)
        dist.send(x, (rank + 1) % n)
    return out


def main():
    dist.init_process_group("nccl" if dist.is_nccl_available() else "gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
    x = torch.full((4,), float(rank), device="cuda" if torch.cuda.is_available() else "cpu")
    gpu = (dist.get_backend() == "nccl" and x.is_cuda and not x.is_cpu and x.device.type == "cuda"
           and x.get_device() == local and x.type() == "torch.cuda.FloatTensor")
    print(f"rank {rank}: took the {'GPU' if gpu else 'CPU'} path")
    out = shift_gpu(x, rank, n, "--bug" in sys.argv) if gpu else shift_cpu(x, rank, n)
    assert out.cpu()[0].item() == (rank - 1) % n
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
