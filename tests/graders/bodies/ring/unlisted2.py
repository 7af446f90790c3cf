"""Wrong bodies of the second round: the kinds unlisted.py did not cover. Each is a class of
mistake, caught in general (from the record, the reference and the harness's properties),
not because this file lists it.

  1. communication where the record did not look (a thread of the body's own);
  2. a method that never has to happen (comparisons that bound messages from above only);
  3. the method on some cases only (large tensors, world sizes beyond 4);
  4. waiting (requests handed back in part, is_completed polling);
  5. buffers that live on for some cases only;
  6. values that do not prove communication (a clock started after the send);
  7. a contract that raises: data moved first, or a collective instead of the refusal.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""
import threading

import torch.distributed as dist

from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_ring = copies.ring.ring_all_reduce


def _pg():
    return dist.distributed_c10d._get_default_group()


def _in_thread(fn, *args):
    """Run fn(*args) in a thread of our own, and wait for it."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)))
    worker.start()
    worker.join()
    return out[0] if out else None


# 1. in a thread of the body's own ----------------------------------------------------------

def ring_thread_pg_allreduce(tensor):
    """The process group's all_reduce, called from a helper thread."""
    _in_thread(lambda: _pg().allreduce([tensor]).wait())
    return tensor


def rs_thread_all_reduce(tensor):
    """ring_reduce_scatter's values from a built-in all_reduce in a helper thread."""
    _in_thread(lambda: _pg().allreduce([tensor]).wait())
    rank, n, _, _ = _ring()
    from labs.ring import chunk_bounds
    start, stop = chunk_bounds(tensor.numel(), n)[rank]
    return tensor.view(-1)[start:stop]


# 3. the method on some cases only ----------------------------------------------------------

def ring_builtin_when_large(tensor):
    """The ring up to 5000 elements, dist.all_reduce above."""
    if tensor.numel() > 5000:
        dist.all_reduce(tensor)
        return tensor
    return reference_ring(tensor)


def ring_falls_back_to_builtin(tensor):
    """The ring, and dist.all_reduce whenever the ring raises (a non-contiguous tensor)."""
    try:
        return reference_ring(tensor)
    except ValueError:
        dist.all_reduce(tensor)
        return tensor


# 2. data that never reaches the process group (the rendezvous store) --------------------------

def _store_all(tensor):
    """Every rank's tensor, through the rendezvous store: no process-group op at all."""
    import pickle
    store = dist.distributed_c10d._get_default_store()
    key = f"unlisted2/{_store_all.calls}"
    _store_all.calls += 1
    store.set(f"{key}/{dist.get_rank()}", pickle.dumps(tensor.clone()))
    return [pickle.loads(store.get(f"{key}/{r}")) for r in range(dist.get_world_size())]


_store_all.calls = 0


def ring_via_store(tensor):
    """The sum, every rank reading every rank's tensor from the store."""
    everyone = _store_all(tensor)
    total = everyone[0].clone()
    for other in everyone[1:]:
        total += other
    tensor.copy_(total)
    return tensor
