"""Wrong bodies that run the method on dummy data, so that their communication is exactly the
reference's, and take the answer by another road: the rendezvous store, a file, shared
memory, a socket, a collective in a thread of its own. What travels must be what the answer
is made of.

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/roads.py.)
"""
import os
import tempfile
from multiprocessing import shared_memory

import torch
import torch.distributed as dist

from tests.graders.bodies.copies import collectives


def _key(name):
    _key.calls = getattr(_key, "calls", 0) + 1
    return f"roads/{name}/{_key.calls}"


def all_gather_dummy_then_files(tensor):
    """The all-gather on zeros; every rank's tensor through files in a shared folder."""
    collectives.p2p_all_gather(torch.zeros_like(tensor))
    folder = os.path.join(tempfile.gettempdir(), _key("gather").replace("/", "-"))
    os.makedirs(folder, exist_ok=True)
    torch.save(tensor.clone(), os.path.join(folder, f"{dist.get_rank()}.pt"))
    dist.barrier()
    return [torch.load(os.path.join(folder, f"{r}.pt")) for r in range(dist.get_world_size())]


def broadcast_dummy_then_shared_memory(tensor, src):
    """The broadcast on zeros; the root's values through POSIX shared memory."""
    collectives.p2p_broadcast(torch.zeros_like(tensor), src)
    name = _key("bcast").replace("/", "-")
    nbytes = max(tensor.numel() * tensor.element_size(), 1)
    if dist.get_rank() == src:
        memory = shared_memory.SharedMemory(name=name, create=True, size=nbytes)
        memory.buf[:nbytes] = tensor.contiguous().view(torch.uint8).numpy().tobytes()[:nbytes]
    dist.barrier()
    if dist.get_rank() != src:
        memory = shared_memory.SharedMemory(name=name)
        data = torch.frombuffer(bytearray(memory.buf[:nbytes]), dtype=tensor.dtype)
        tensor.copy_(data[:tensor.numel()].view_as(tensor))
    dist.barrier()
    memory.close()
    return tensor
