"""GPU code the doctor cannot run on the CPU: it stops there, naming the call and its line.

    python -m labs.doctor --nproc-per-node 2 unmappable.py graph     # a CUDA graph
    python -m labs.doctor --nproc-per-node 2 unmappable.py kernel    # an op with a CUDA kernel only
    python -m labs.doctor --nproc-per-node 2 unmappable.py triton    # import triton
    python -m labs.doctor --nproc-per-node 2 unmappable.py fallback  # except ImportError: runs
"""
import os
import sys

import torch
import torch.distributed as dist

what = sys.argv[1]
dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
x = torch.ones(4, device="cuda")
dist.all_reduce(x)

if what == "graph":
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x * 2
elif what == "kernel":
    lib = torch.library.Library("gpu_only", "DEF")        # a custom op, CUDA kernel only
    lib.define("scale(Tensor x) -> Tensor")
    lib.impl("scale", lambda t: t * 2, "CUDA")
    y = torch.ops.gpu_only.scale(x)
elif what == "triton":
    import triton  # noqa: F401
elif what == "fallback":
    try:
        from flash_attn import flash_attn_func  # noqa: F401
    except ImportError:                           # the script's own fallback runs
        flash_attn_func = None
    print(f"rank {dist.get_rank()}: flash_attn_func is {flash_attn_func}")
dist.destroy_process_group()
