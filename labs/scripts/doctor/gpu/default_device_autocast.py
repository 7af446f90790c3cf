"""A GPU script that makes CUDA the default device and computes under autocast with a
gradient scaler, then sends the result to the next rank. On GPUs, torch.autocast("cuda")
makes the matmul's output float16; without a GPU torch turns that autocast off (and the
CUDA GradScaler: torch/amp/autocast_mode.py, torch/amp/grad_scaler.py) and the output is
float32. The doctor must check the float16 program, the one GPUs run.

    python -m labs.doctor --nproc-per-node 3 default_device_autocast.py          # clean
    python -m labs.doctor --nproc-per-node 3 default_device_autocast.py --bug    # dtype bug

--bug: the receiver allocates its buffer as float32 (the default dtype) for a float16
message: gloo fills half of it with reinterpreted bytes; NCCL does not compare dtypes.
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.set_default_device("cuda")
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    weight = torch.nn.Parameter(torch.eye(8) * (rank + 1))
    x = torch.ones(4, 8)
    scaler = torch.amp.GradScaler("cuda")
    with torch.autocast("cuda"):
        y = x @ weight
    scaler.scale(y.float().sum()).backward()
    y = y.detach()
    dtype = torch.float32 if "--bug" in sys.argv else y.dtype
    theirs = torch.empty(4, 8, dtype=dtype)
    print(f"rank {rank}: default device {torch.get_default_device()}, tensors on "
          f"{theirs.device}, autocast made {y.dtype}, grad scaler on: {scaler.is_enabled()}")
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, y, (rank + 1) % n),
                                    dist.P2POp(dist.irecv, theirs, (rank - 1) % n)])
    for work in works:
        work.wait()
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
