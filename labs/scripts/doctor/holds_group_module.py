"""A correct ring shift written at module level, as torch's batch_isend_irecv docstring
example is: the module-level list of P2POps keeps the group (each P2POp's `.group`), so
destroy_process_group() frees nothing (lesson 11, section 5).

    python -m labs.doctor --nproc-per-node 3 holds_group_module.py          # a note naming ops
    python -m labs.doctor --nproc-per-node 3 holds_group_module.py --del    # the fix: no note

--del: the fix the doctor suggests, `del ops` (at module level) before destroy_process_group().
"""
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
send_tensor = torch.arange(2, dtype=torch.float32) + 2 * rank
recv_tensor = torch.randn(2, dtype=torch.float32)
send_op = dist.P2POp(dist.isend, send_tensor, (rank + 1) % n)
recv_op = dist.P2POp(dist.irecv, recv_tensor, (rank - 1 + n) % n)
ops = [send_op, recv_op]
for req in dist.batch_isend_irecv(ops):
    req.wait()
print(f"rank {rank} received {recv_tensor.tolist()}")
if "--del" in sys.argv:
    del ops, send_op, recv_op
dist.destroy_process_group()
