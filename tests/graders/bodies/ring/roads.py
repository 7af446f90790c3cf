"""Wrong bodies that run the method on dummy data, so that their communication is exactly the
reference's, and take the answer by another road: the rendezvous store, a file, shared
memory, a socket, a collective in a thread of its own. What travels must be what the answer
is made of.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/roads.py.)
"""
import pickle
import threading

import torch
import torch.distributed as dist

from tests.graders.bodies.copies import ring


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
