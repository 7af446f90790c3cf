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

(Lesson `collectives`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""
import threading

import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_all_gather = copies.collectives.p2p_all_gather
reference_broadcast = copies.collectives.p2p_broadcast


def _in_thread(fn, *args):
    """Run fn(*args) in a thread of our own, and wait for it."""
    out = []
    worker = threading.Thread(target=lambda: out.append(fn(*args)))
    worker.start()
    worker.join()
    return out[0] if out else None


def broadcast_thread(tensor, src):
    """p2p_broadcast through the built-in broadcast, in a helper thread."""
    _in_thread(lambda: dist.broadcast(tensor, src))
    return tensor


def all_gather_builtin_beyond_4(tensor):
    """The ring up to 4 ranks; dist.all_gather from 5 on."""
    if dist.get_world_size() <= 4:
        return reference_all_gather(tensor)
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return out


def broadcast_builtin_beyond_4(tensor, src):
    if dist.get_world_size() > 4:
        dist.broadcast(tensor, src)
        return tensor
    return reference_broadcast(tensor, src)


_SLOTS = {}


def all_gather_views_of_kept_buffer(tensor):
    """Returns views into one buffer it keeps per dtype, for tensors of 1000+ elements."""
    if tensor.numel() < 1000:
        return reference_all_gather(tensor)
    n = dist.get_world_size()
    flat = _SLOTS.setdefault(tensor.dtype, torch.empty(n * 4096, dtype=tensor.dtype))
    out = [flat[i * 4096:i * 4096 + tensor.numel()].view(tensor.shape) for i in range(n)]
    for slot, got in zip(out, reference_all_gather(tensor)):
        slot.copy_(got)
    return out


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


def broadcast_via_store(tensor, src):
    tensor.copy_(_store_all(tensor)[src])
    return tensor
