"""Lesson 08's snippet 1 as a script, exactly as it circulates (two ranks):

    torchrun --nproc-per-node 2 snippet1.py

Constant peers: rank 0 receives from itself and rank 1 sends to itself.
"""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
tensor1 = torch.randn(5)            # the data to send
tensor2 = torch.randn(3)            # the data to receive, says the text
ops = [dist.P2POp(dist.isend, tensor1, 1),
       dist.P2POp(dist.irecv, torch.empty_like(tensor2), 0)]
reqs = dist.batch_isend_irecv(ops)
reqs[1].wait()
# ... "now process tensor2"
dist.destroy_process_group()
