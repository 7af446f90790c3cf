"""PyTorch's own pipeline schedules (torch.distributed.pipelining), two stages, one per rank:

    python -m labs.doctor --nproc-per-node 2 torch_pipelining.py gpipe
    python -m labs.doctor --nproc-per-node 2 torch_pipelining.py 1f1b [--cuda]

A 4-layer MLP split in two; the schedule runs 4 microbatches forward and backward (its own
batch_isend_irecv calls), and the last stage's loss is checked against the whole model's.
`--cuda` writes it as on GPUs (nccl, set_device, the stages on "cuda").
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}
CUDA = "--cuda" in sys.argv
schedule_class = SCHEDULES[sys.argv[1]]

dist.init_process_group("nccl" if CUDA else "gloo")
rank, n = dist.get_rank(), dist.get_world_size()
assert n == 2, "two stages, one per rank"
if CUDA:
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if CUDA else torch.device("cpu")

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
                              for _ in range(4)])
x, target = torch.randn(8, 16), torch.randn(8, 16)
loss_fn = torch.nn.MSELoss()
with torch.no_grad():
    whole = loss_fn(model(x), target).item()

part = model[2 * rank: 2 * rank + 2].to(device)
stage = PipelineStage(part, stage_index=rank, num_stages=n, device=device)
schedule = schedule_class(stage, n_microbatches=4, loss_fn=loss_fn)
losses = []
if rank == 0:
    schedule.step(x.to(device))
else:
    schedule.step(target=target.to(device), losses=losses)
    mean = torch.stack(losses).mean().item()
    assert abs(mean - whole) < 1e-5, (mean, whole)
    print(f"{sys.argv[1]}: the last stage's loss {mean:.5f} is the whole model's")
dist.destroy_process_group()
