"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red9_early.py.)
"""
import time

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


def batched_reads_before_wait(tensor, peer):
    """WRONG (reads the receive buffer before wait): after posting, it sleeps and copies the
    receive buffer out through numpy (no torch op: the record does not see the read), then
    waits and returns the copy taken before wait: whatever had landed by then."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    time.sleep(0.05)
    early = torch.from_numpy(received.numpy().copy()) if received.dim() else \
        torch.tensor(received.numpy().copy())
    _wait(works)
    return early


def checked_equal_meta(tensor, peer):
    """RIGHT: the meta exchange in one batch, the check as torch.equal of the two encodings,
    the message from decode_meta of both; the data in one batch (isend/irecv listed
    receive first)."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.zeros_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, theirs, peer),
                                  dist.P2POp(dist.isend, mine, peer)]))
    if not torch.equal(mine, theirs):
        (s1, d1), (s2, d2) = decode_meta(mine), decode_meta(theirs)
        raise ValueError(f"shape/dtype mismatch: mine {list(s1)} {d1}, peer {peer}'s "
                         f"{list(s2)} {d2}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer),
                                  dist.P2POp(dist.isend, tensor, peer)]))
    return out


def batched_head_to_head_at_odd_world(tensor, peer):
    """WRONG (deadlocks at odd world sizes): batched as asked when the world size is even, but
    with 3, 5 or 7 ranks (pairs 0-1, 2-3 still exist there) both sides call a blocking send
    first, head to head: gloo's send waits for the receive, so the pair hangs."""
    if dist.get_world_size() % 2:
        out = torch.empty_like(tensor)
        dist.send(tensor, peer)
        dist.recv(out, peer)
        return out
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out


def checked_partial_shape(tensor, peer):
    """WRONG (returns silently wrong data): the meta exchange as asked, but the check compares
    ndim, numel, the first size and the dtype only: (2, 3, 4) against (2, 4, 3) passes the
    check and the data is exchanged into the wrong shape. No graded mismatch has 3 dims."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    shape, dtype = decode_meta(theirs)
    numel = 1
    for s in shape:
        numel *= s
    first = shape[0] if shape else None
    if (len(shape), numel, first, dtype) != \
            (tensor.dim(), tensor.numel(), tensor.shape[0] if tensor.dim() else None,
             tensor.dtype):
        raise ValueError(f"checked_exchange: mine {tuple(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer}'s {shape} {dtype}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, out, peer)]))
    return out
