"""A send buffer whose storage is freed while the send is in flight (as a memory-saving
pipeline frees an activation it has just sent): the hazard."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    activation = torch.full((1024,), 3.0)
    work = dist.isend(activation, 1)
    activation.untyped_storage().resize_(0)   # HAZARD: freed while the send is in flight
    work.wait()
elif rank == 1:
    got = torch.empty(1024)
    dist.recv(got, 0)
    print(f"rank 1 got {got[0].item()}")
dist.destroy_process_group()
