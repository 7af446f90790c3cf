"""A pipeline that ships metadata on a CPU group and tensors on the device group, as vLLM's
`send_tensor_dict` does (metadata pickled over a gloo group made with
`new_group(backend="gloo")`, tensors over the NCCL group). Every stage but the first receives
the metadata, allocates what it says and receives the tensors; every stage but the last
sends on. The sender posts its tensor isends FIRST, then the metadata: correct, because
every process group matches its own messages (its own gloo context / NCCL communicator).

    torchrun --nproc-per-node 3 groups_metadata_pipeline.py                   # on GPUs
    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/groups_metadata_pipeline.py

device_id makes NCCL create the device group's communicator at init. Run with --lazy for
the hazard twin without it: the first isend then creates the pair's communicator lazily and
waits there for a receiver that is itself waiting for the metadata on the CPU group, which
the sender sends only after its isend (a hang on NCCL, fine on gloo). The twin that puts a
tensor on the wrong group: groups_wrong_group.py.
"""
import os
import sys

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank)
if "--lazy" in sys.argv:
    dist.init_process_group("nccl")
else:
    dist.init_process_group("nccl", device_id=device)
cpu_group = dist.new_group(backend="gloo")          # vLLM's cpu_group, for metadata
rank, world = dist.get_rank(), dist.get_world_size()


def send_tensor_dict(tensors: dict, dst: int) -> None:
    works = [dist.isend(t, dst) for t in tensors.values()]      # tensors first ...
    meta = [(name, tuple(t.shape), t.dtype) for name, t in tensors.items()]
    dist.send_object_list([meta], dst, group=cpu_group)         # ... then what they are
    for w in works:
        w.wait()


def recv_tensor_dict(src: int) -> dict:
    box = [None]
    dist.recv_object_list(box, src, group=cpu_group)
    out = {name: torch.empty(shape, dtype=dtype, device=device) for name, shape, dtype in box[0]}
    works = [dist.irecv(t, src) for t in out.values()]
    for w in works:
        w.wait()
    return out


if rank == 0:
    state = {"hidden": torch.arange(12.0, device=device).reshape(3, 4),
             "positions": torch.arange(3, device=device)}
else:
    state = recv_tensor_dict(rank - 1)
    state["hidden"] = state["hidden"] + 1               # this stage's work
if rank < world - 1:
    send_tensor_dict(state, rank + 1)
expected = torch.arange(12.0).reshape(3, 4) + rank
assert torch.equal(state["hidden"].cpu(), expected), state["hidden"]
assert state["positions"].tolist() == [0, 1, 2]
torch.cuda.synchronize()
print(f"stage {rank}: hidden sum {state['hidden'].sum().item():.0f}")
cpu_group = None                    # a module global holds the group: drop it first
dist.destroy_process_group()
