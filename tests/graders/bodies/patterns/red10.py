"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring

# -- in-flight buffers read or written where the dispatcher does not see -------------------


# -- rotate_kv ---------------------------------------------------------------------------

def _rotate_post(k, v):
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    return k_next, v_next, works


def rotate_kv_future_waited(k, v):
    """WRONG (waits inside rotate_kv through each Work's future, then hands the works back):
    nothing overlaps with attention any more; the record patches Work.wait only."""
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        w.get_future().wait()
    return k_next, v_next, works


def rotate_kv_synchronize(k, v):
    """RIGHT: calls Work.synchronize() on each work before handing them back; on CPU gloo it
    is a no-op (it only orders CUDA streams), so nothing is waited inside: still overlapped."""
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        w.synchronize()
    return k_next, v_next, works


def rotate_kv_waits_unseen(k, v):
    """WRONG (waits for the 4 transfers inside rotate_kv through the record's saved, unpatched
    Work.wait, found by a computed module name): no overlap left for attention; unseen."""
    import importlib
    saved = getattr(importlib.import_module("labs.harness." + "grading.record"),
                    "_original" + "_wait")
    k_next, v_next, works = _rotate_post(k, v)
    for w in works:
        saved(w)
    return k_next, v_next, works


def _swap_one_batch(x, peer):
    flat = x.detach().reshape(-1).contiguous()
    into = torch.empty(flat.shape, dtype=flat.dtype)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.irecv, into, peer),
                                     dist.P2POp(dist.isend, flat, peer)]):
        w.wait()
    return into.view(x.shape)


def fwd_exchange_flat(output, next_rank):
    """RIGHT: receive first in the one batch, both sides flattened (reshape(-1) of a
    contiguous copy), the result viewed back to the shape: same messages, same batch."""
    return _swap_one_batch(output, next_rank)


def rotate_kv_recv_first(k, v):
    """RIGHT: the 4 ops in another order (receives first, v before k); all in one batch, the
    works handed back unwaited."""
    nxt, prev = _ring()
    k_next, v_next = torch.zeros_like(k), torch.zeros_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, v_next, prev),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.isend, k, nxt)])
    return k_next, v_next, list(works)
