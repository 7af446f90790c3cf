"""Wrong bodies that run the method on dummy data, so that their communication is exactly the
reference's, and take the answer by another road: the rendezvous store, a file, shared
memory, a socket, a collective in a thread of its own. What travels must be what the answer
is made of."""
import os
import pickle
import socket
import tempfile
import threading
from multiprocessing import shared_memory

import torch
import torch.distributed as dist

from tests.graders.bodies.copies import collectives, gradients, p2p, ring


def _key(name):
    _key.calls = getattr(_key, "calls", 0) + 1
    return f"roads/{name}/{_key.calls}"


def ring_dummy_then_store(tensor):
    """The ring on zeros; the sum through the store."""
    ring.ring_all_reduce(torch.zeros_like(tensor))
    store, key = dist.distributed_c10d._get_default_store(), _key("ring")
    store.set(f"{key}/{dist.get_rank()}", pickle.dumps(tensor.clone()))
    total = sum(pickle.loads(store.get(f"{key}/{r}")) for r in range(dist.get_world_size()))
    tensor.copy_(total)
    return tensor


def rs_dummy_then_prefix_store(tensor):
    """The reduce-scatter on zeros; every rank's tensor through a PrefixStore of the store."""
    ring.ring_reduce_scatter(torch.zeros_like(tensor))
    store = dist.PrefixStore(_key("rs"), dist.distributed_c10d._get_default_store())
    store.set(str(dist.get_rank()), pickle.dumps(tensor.clone()))
    total = sum(pickle.loads(store.get(str(r))) for r in range(dist.get_world_size()))
    tensor.copy_(total)
    start, stop = ring.chunk_bounds(tensor.numel(), dist.get_world_size())[dist.get_rank()]
    return tensor.view(-1)[start:stop]


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


def pass_token_dummy_then_socket(token):
    """The ring on a dummy token; the real one asked of a socket (it is refused before it
    connects: the body never gets further than making one)."""
    p2p.pass_token(torch.zeros_like(token))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM):
        pass
    return token.clone()


def average_dummy_then_store(model):
    """The ring average on zero gradients; the real ones summed through the store."""
    store, key = dist.distributed_c10d._get_default_store(), _key("avg")
    params = [p for p in model.parameters() if p.grad is not None]
    grads = [p.grad.clone() for p in params]
    for p in params:
        p.grad.zero_()
    gradients.average_gradients_ring(model)
    store.set(f"{key}/{dist.get_rank()}", pickle.dumps(grads))
    everyone = [pickle.loads(store.get(f"{key}/{r}")) for r in range(dist.get_world_size())]
    for i, p in enumerate(params):
        p.grad.copy_(sum(g[i] for g in everyone) / dist.get_world_size())


def ring_dummy_then_thread(tensor):
    """The ring on zeros; the sum by dist.all_reduce in a thread of its own."""
    ring.ring_all_reduce(torch.zeros_like(tensor))
    worker = threading.Thread(target=dist.all_reduce, args=(tensor,))
    worker.start()
    worker.join()
    return tensor


def ring_dummy_then_thread_pg(tensor):
    """The ring on zeros; the sum by the process group's own allreduce, in a thread."""
    ring.ring_all_reduce(torch.zeros_like(tensor))
    worker = threading.Thread(target=lambda: dist.group.WORLD.allreduce([tensor]).wait())
    worker.start()
    worker.join()
    return tensor


def _rebuilt_sum(tensor, seeded):
    """The sum of every rank's input, rebuilt: the case whose data for this rank equals
    `tensor`, then every rank's data for that case."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for case in list(range(100, 400)) + list(range(100)):
        if torch.equal(seeded(rank, tensor.shape, tensor.dtype, case), tensor):
            return sum(seeded(r, tensor.shape, tensor.dtype, case).double()
                       for r in range(world_size)).to(tensor.dtype)
    return tensor.clone()


def ring_dummy_then_rebuilt(tensor):
    """The ring on zeros; the sum rebuilt from the lessons' seeded data (what the graders
    used to draw their inputs from)."""
    from labs.harness.ranks.data import seeded
    total = _rebuilt_sum(tensor, seeded)
    ring.ring_all_reduce(torch.zeros_like(tensor))
    return tensor.copy_(total)


def ring_dummy_then_rebuilt_from_graders(tensor):
    """The same, rebuilt from the graders' own seeded()."""
    from labs.harness.grading import seeded
    total = _rebuilt_sum(tensor, seeded)
    ring.ring_all_reduce(torch.zeros_like(tensor))
    return tensor.copy_(total)
