"""Python objects between two ranks with send_object_list / recv_object_list: correct, a clean
bill, and the report states what torch's docs on these APIs warn about and the doctor does
not check (pickle's security, performance, GPU tensors inside objects).

    python -m labs.doctor --nproc-per-node 2 labs/scripts/doctor/object_lists.py
"""
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 0:
    dist.send_object_list([{"step": 3}, "hello"], dst=1)
else:
    got = [None, None]
    dist.recv_object_list(got, src=0)
    print(f"rank 1 got {got}")
dist.destroy_process_group()
