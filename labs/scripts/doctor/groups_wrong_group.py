"""groups_metadata_pipeline.py's twin with one argument wrong: the receiver posts the tensors'
irecv on the CPU group it used for the metadata, while the sender sends them on the device
group. Each process group matches only its own messages (its own gloo context / NCCL
communicator): the isend and the irecv never meet, on gloo as on NCCL, and the job hangs.

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/groups_wrong_group.py
"""
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)
dist.init_process_group("nccl", device_id=device)
cpu_group = dist.new_group(backend="gloo")          # vLLM's cpu_group, for metadata
rank, world = dist.get_rank(), dist.get_world_size()


def send_tensor_dict(tensors: dict, dst: int) -> None:
    works = [dist.isend(t, dst) for t in tensors.values()]      # on the device group
    meta = [(name, tuple(t.shape), t.dtype) for name, t in tensors.items()]
    dist.send_object_list([meta], dst, group=cpu_group)
    for w in works:
        w.wait()


def recv_tensor_dict(src: int) -> dict:
    box = [None]
    dist.recv_object_list(box, src, group=cpu_group)
    out = {name: torch.empty(shape, dtype=dtype, device=device) for name, shape, dtype in box[0]}
    works = [dist.irecv(t, src, group=cpu_group) for t in out.values()]   # the wrong group
    for w in works:
        w.wait()
    return out


if rank == 0:
    state = {"hidden": torch.arange(12.0, device=device).reshape(3, 4)}
else:
    state = recv_tensor_dict(rank - 1)
    state["hidden"] = state["hidden"] + 1
if rank < world - 1:
    send_tensor_dict(state, rank + 1)
torch.cuda.synchronize()
cpu_group = None
dist.destroy_process_group()
