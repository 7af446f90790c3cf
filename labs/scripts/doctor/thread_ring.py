"""The ring exchange made from a helper thread, as a data loader or a communication thread
would: every rank's thread sends to the next rank, then receives from the previous one, with
blocking calls. On gloo a send waits for its receive, so no thread reaches its receive: a
deadlock, named at the thread's own line (the doctor records every thread the script starts).
Fixed twin: thread_ring_batched.py.

    python -m labs.doctor --nproc-per-node 3 labs/scripts/doctor/thread_ring.py
"""
import threading

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mine, theirs = torch.full((10,), float(rank)), torch.empty(10)


def exchange():
    dist.send(mine, (rank + 1) % world)          # the hazard: every rank sends first
    dist.recv(theirs, (rank - 1) % world)


worker = threading.Thread(target=exchange, name="comm")
worker.start()
worker.join()
dist.destroy_process_group()
