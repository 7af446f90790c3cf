"""thread_ring.py fixed: the helper thread posts the send and the receive in one
batch_isend_irecv and waits for every Work. Clean on gloo and in the NCCL model; the calls
are the thread's, and recorded as such.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/thread_ring_batched.py
"""
import threading

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)


def exchange():
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, (rank + 1) % world),
                                    dist.P2POp(dist.irecv, theirs, (rank - 1) % world)])
    for work in works:
        work.wait()


worker = threading.Thread(target=exchange, name="comm")
worker.start()
worker.join()
assert theirs[0].item() == (rank - 1) % world, theirs
dist.destroy_process_group()
