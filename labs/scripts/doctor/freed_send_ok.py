"""The fixed twin of freed_send.py: the storage is freed only after the send's wait."""
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0:
    activation = torch.full((1024,), 3.0)
    work = dist.isend(activation, 1)
    work.wait()
    activation.untyped_storage().resize_(0)   # after the wait: the transfer is done with it
elif rank == 1:
    got = torch.empty(1024)
    dist.recv(got, 0)
    assert got[0].item() == 3.0
    print(f"rank 1 got {got[0].item()}")
dist.destroy_process_group()
