"""Every CUDA call a GPU point-to-point script makes, once, around one exchange between
neighbours (run by the doctor's tests: each line must run on the CPU, mapped):

    python -m labs.doctor --nproc-per-node 2 every_cuda_call.py
"""
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
assert torch.cuda.is_available() and torch.cuda.device_count() == int(os.environ["LOCAL_WORLD_SIZE"])
torch.cuda.set_device(local_rank)
assert torch.cuda.current_device() == local_rank
device = torch.device("cuda", local_rank)
dist.init_process_group(backend="cpu:gloo,cuda:nccl", device_id=device)
rank, n = dist.get_rank(), dist.get_world_size()
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.benchmark = True
torch.cuda.manual_seed(1234)
torch.cuda.empty_cache()
torch.cuda.reset_peak_memory_stats()
print(torch.cuda.get_device_name(), torch.cuda.get_device_properties(device).total_memory > 0,
      torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated() >= 0)

a = torch.full((8,), float(rank), device="cuda")
b = torch.zeros(8, device=f"cuda:{local_rank}")
c = torch.ones(8, device=device).cuda().to("cuda", non_blocking=True).to(device)
host = torch.arange(8.0).pin_memory()
d = host.to(device, non_blocking=True)
layer = torch.nn.Linear(8, 8).cuda()
e = layer(torch.randn(2, 8).to(local_rank)).float().to(torch.float16).to("cuda:0")

side = torch.cuda.Stream()
assert torch.cuda.current_stream() == torch.cuda.default_stream()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    assert torch.cuda.current_stream() is side
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, (rank + 1) % n),
                                    dist.P2POp(dist.irecv, b, (rank - 1) % n)])
    a.record_stream(side)
for work in works:
    work.wait()
end.record()
end.synchronize()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
assert start.elapsed_time(end) >= 0 and end.query()
assert b[0].item() == (rank - 1) % n, b
assert (c == 1).all() and (d == host).all() and e.dtype == torch.float16
print(f"rank {rank}: every CUDA call ran, mapped onto the CPU")
dist.destroy_process_group()
