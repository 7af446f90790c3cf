"""Red team 9 (early lessons 01-04, 08): bodies for the p2p, batching, waiting, deadlocks and
snippets graders. Each docstring starts with WRONG (...) or RIGHT: and says why."""
import time

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


def _ring():
    rank, ws = dist.get_rank(), dist.get_world_size()
    return rank, ws, (rank + 1) % ws, (rank - 1) % ws


# -- WRONG ----------------------------------------------------------------------------------

def step_hidden_product_first(block, weight, recv_buf):
    """WRONG (no overlap): the real product is computed BEFORE posting, with the weight's
    torch-function subclass switched off (the watcher never sees it); a one-row token
    product runs in flight for the trace. Nothing real overlaps the transfer."""
    rank, ws, nxt, prev = _ring()
    with torch._C.DisableTorchFunctionSubclass():
        product = torch.mm(block, weight).as_subclass(torch.Tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    return product


def step_hidden_product_after_wait(block, weight, recv_buf):
    """WRONG (no overlap): token product in flight, the real product only after both waits,
    computed on the weight with the torch-function subclass disabled: the transfer is over
    before the work begins."""
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    with torch._C.DisableTorchFunctionSubclass():
        return torch.mm(block, weight).as_subclass(torch.Tensor)


def shift_flips_send_in_flight(tensor):
    """WRONG (send buffer written in flight): sends a private copy, then negates it twice
    while the send is in flight ("it is back before wait"): gloo may read it negated."""
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    mine = tensor.clone()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, nxt),
                                    dist.P2POp(dist.irecv, out, prev)])
    if mine.is_floating_point():
        mine.neg_()
        mine.neg_()
    else:
        mine.bitwise_not_()
        mine.bitwise_not_()
    _wait(works)
    return out


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


def shift_reads_before_wait(tensor):
    """WRONG (reads the receive buffer before wait): the copy returned is taken through
    numpy after a short sleep, before wait(): complete only if gloo happened to be done."""
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                    dist.P2POp(dist.irecv, out, prev)])
    time.sleep(0.05)
    early = torch.tensor(out.numpy().copy())
    _wait(works)
    return early


def average_reads_before_wait(model):
    """WRONG (reads receive buffers before wait): the one batch, then the average is built
    from numpy copies of the receive buffers taken before any wait() (after a sleep)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    works = dist.batch_isend_irecv(ops) if ops else []
    time.sleep(0.1)
    early = {q: [torch.from_numpy(b.numpy().copy()) for b in received[q]] for q in peers}
    _wait(works)
    for k, p in enumerate(params):
        total = grads[k].clone()
        for q in peers:
            total += early[q][k]
        p.grad = total / ws


def average_via_shared_file(model):
    """WRONG (data through a side road): the one batch is posted and waited as the contract
    says, but the average is built from a file every rank maps (torch's C++ from_file, reached
    as torch._C._VariableFunctions.from_file: no audit event, not the guarded torch.from_file),
    never from the receive buffers; barriers (allowed: they "move no data") order it."""
    import os
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    flat = torch.cat([g.reshape(-1) for g in grads])
    n = flat.numel()
    path = f"/tmp/rt9_side_{os.getppid()}_{n}_{str(flat.dtype)[6:]}"
    shared = torch._C._VariableFunctions.from_file(path, True, ws * n, dtype=flat.dtype)
    shared[rank * n:(rank + 1) * n] = flat
    dist.barrier()
    mean = shared.view(ws, n).sum(0) / ws
    dist.barrier()                     # nobody overwrites before everyone has read
    for p, piece in zip(params, mean.split([g.numel() for g in grads])):
        p.grad = piece.view_as(p.grad).clone()


# -- RIGHT ------------------------------------------------------------------------------------

def all_pairs_zero_dim_lengths(chunks):
    """RIGHT: the two phases as the protocol says; each length travels as a 0-dim int64
    tensor (one element, SIZE_TAG), received into 0-dim buffers; chunks in a second batch."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [chunks[rank].clone() if i == rank else None for i in range(ws)]
    if not peers:
        return out
    lengths = {p: torch.tensor(chunks[p].numel(), dtype=torch.int64) for p in peers}
    theirs = {p: torch.tensor(0, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.isend, lengths[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        out[p] = chunks[rank].new_empty(int(theirs[p]))
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]))
    return out


def step_tensordot(block, weight, recv_buf):
    """RIGHT: post both transfers, compute the product with torch.tensordot while they fly
    (another torch function for the same matmul), then wait for both."""
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, recv_buf, prev),
                                    dist.P2POp(dist.isend, block, nxt)])
    product = torch.tensordot(block, weight, dims=([1], [0]))
    _wait(reversed(works))
    return product


def ping_pong_rank1_preposts(tensor, rounds):
    """RIGHT: blocking ping-pong, but rank 1 pre-posts the receive of round r+1 before it
    sends reply r (a fresh buffer each round, every request waited, none left at the end)."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, 1)
            dist.recv(reply, 1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank != 1:
        return None
    received = []
    buf = torch.empty_like(tensor)
    pending = dist.irecv(buf, 0) if rounds else None
    for r in range(rounds):
        pending.wait()
        received.append(buf)
        reply = buf + 1
        if r + 1 < rounds:
            buf = torch.empty_like(tensor)
            pending = dist.irecv(buf, 0)
        dist.send(reply, 0)
    return received


def average_into_flat_views(model):
    """RIGHT: one batch; each peer's gradients land in views of one flat buffer per peer
    (split by parameter sizes), all waited, then the mean per parameter as new tensors."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    sizes = [g.numel() for g in grads]
    peers = [(rank + d) % ws for d in range(1, ws)]
    flat = {q: grads[0].new_empty(sum(sizes)) for q in peers}
    views = {q: [v.view_as(g) for v, g in zip(flat[q].split(sizes), grads)] for q in peers}
    ops = [dist.P2POp(dist.irecv, views[q][k], q) for q in peers for k in range(len(grads))]
    ops += [dist.P2POp(dist.isend, grads[k], q) for q in peers for k in range(len(grads))]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    for k, p in enumerate(params):
        p.grad = torch.stack([grads[k]] + [views[q][k] for q in sorted(peers)]).sum(0) / ws


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


def average_waits_receives_then_sends(model):
    """RIGHT: one batch; waits the receives, builds the new gradients as NEW tensors (the
    sent ones are never written), and only then waits the sends, before returning."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    sends = [dist.P2POp(dist.isend, g, q) for q in peers for g in grads]
    recvs = [dist.P2POp(dist.irecv, b, q) for q in peers for b in received[q]]
    works = dist.batch_isend_irecv(sends + recvs) if peers else []
    _wait(works[len(sends):])
    for k, p in enumerate(params):
        total = grads[k].clone()
        for q in peers:
            total += received[q][k]
        p.grad = total / ws
    _wait(works[:len(sends)])


def average_hidden_all_reduce(model):
    """WRONG (a collective out of sight): the one batch is posted and waited for the record,
    but the average comes from the process group's own allreduce called with the dispatch
    modes switched off (_disable_current_modes): neither the record nor the trace sees it."""
    from torch.utils._python_dispatch import _disable_current_modes
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    peers = [q for q in range(ws) if q != rank]
    received = {q: [torch.empty_like(g) for g in grads] for q in peers}
    ops = []
    for q in peers:
        for g, b in zip(grads, received[q]):
            ops += [dist.P2POp(dist.isend, g, q), dist.P2POp(dist.irecv, b, q)]
    _wait(dist.batch_isend_irecv(ops) if ops else [])
    flat = torch.cat([g.reshape(-1) for g in grads])
    with _disable_current_modes():
        dist.distributed_c10d._get_default_group().allreduce([flat]).wait()
    mean = flat / ws
    for p, piece in zip(params, mean.split([g.numel() for g in grads])):
        p.grad = piece.view_as(p.grad).clone()


def step_product_in_thread(block, weight, recv_buf):
    """RIGHT: post both transfers, compute block @ weight on a helper thread (the main thread
    only joins it), then wait for both: the product is computed while the data travels."""
    import threading
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("p", torch.matmul(block, weight)))
    worker.start()
    worker.join()
    _wait(works)
    return box["p"]


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


def ring_shift_relays_long_shifts(tensor, k):
    """WRONG (relayed): shifts of at most 2 positions (either way) go straight to rank + k,
    longer ones are passed along one hop at a time. The graded k's never leave a residue
    of 3 .. world_size - 3 (k = 3 with 8 ranks: three hops through the ranks between)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    d = k % ws
    if d == 0:
        return tensor.clone()
    if d > ws // 2:
        d -= ws
    hops, step = ((1, d) if abs(d) <= 2 else (abs(d), 1 if d > 0 else -1))
    current = tensor
    for _ in range(hops):
        out = torch.empty_like(tensor)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, current, (rank + step) % ws),
                                      dist.P2POp(dist.irecv, out, (rank - step) % ws)]))
        current = out
    return current


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


def ping_pong_pool_of_four(tensor, rounds):
    """WRONG (replies overwritten from round 5 on): rank 0 receives into a pool of at most
    four buffers made per call, reused round-robin; rank 1 likewise. With rounds >= 5 reply
    4 lands in reply 0's memory. The graded calls and probes never run more than 4 rounds."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    pool = [torch.empty_like(tensor) for _ in range(min(rounds, 4))]
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for r in range(rounds):
            reply = pool[r % 4]
            t0 = time.perf_counter()
            dist.send(current, 1)
            dist.recv(reply, 1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    received = []
    for r in range(rounds):
        buf = pool[r % 4]
        dist.recv(buf, 0)
        received.append(buf)
        dist.send(buf + 1, 0)
    return received


def all_pairs_lengths_in_one_tensor(chunks):
    """RIGHT: the protocol as asked, with every length sent from (and received into) a view
    of one int64 tensor, one element per peer; all lengths waited, then the chunks batch."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [None] * ws
    out[rank] = chunks[rank].clone()
    if not peers:
        return out
    mine = torch.tensor([c.numel() for c in chunks], dtype=torch.int64)
    theirs = torch.zeros(ws, dtype=torch.int64)
    _wait(dist.batch_isend_irecv(
        [op for p in peers for op in (dist.P2POp(dist.isend, mine[p:p + 1], p, tag=SIZE_TAG),
                                      dist.P2POp(dist.irecv, theirs[p:p + 1], p, tag=SIZE_TAG))]))
    for p in peers:
        out[p] = torch.empty(int(theirs[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [op for p in peers for op in (dist.P2POp(dist.isend, chunks[p].contiguous(), p,
                                                 tag=DATA_TAG),
                                      dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG))]))
    return out


def shift_tampers_with_grader(tensor):
    """WRONG (tampers with the grader): switches off the in-worker method comparison
    (graded.differences, graded.contents_problems), then shifts with the all_gather
    collective; safe_ring_shift's grader has no check of its own on the trace."""
    import labs.harness.grading.graded as graded
    graded.differences = lambda *a, **k: []
    graded.contents_problems = lambda *a, **k: []
    rank, ws = dist.get_rank(), dist.get_world_size()
    everyone = [torch.empty_like(tensor) for _ in range(ws)]
    dist.all_gather(everyone, tensor)
    return everyone[(rank - 1) % ws]


def shift_empty_shortcut(tensor):
    """WRONG (zero-size tensors): "nothing to send" shortcut returns torch.empty(0), float32
    of shape (0,), whatever the tensor's dtype and shape ((0, 3) int64 comes back wrong).
    safe_ring_shift's cases have no zero-size tensor; the rest is the reference."""
    if tensor.numel() == 0:
        return torch.empty(0)
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    return out


def neighbours_flips_send_in_flight(tensor):
    """WRONG (send buffer written in flight): one batch of four ops as asked, but the tensor
    sent is a private copy that is negated and negated back while both sends are in flight:
    gloo may read it negated (a 2-rank test corrupted 18 of 20 large transfers)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % ws, (rank + 1) % ws
    mine = tensor.clone()
    a, b = torch.empty_like(tensor), torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, left),
                                    dist.P2POp(dist.isend, mine, right),
                                    dist.P2POp(dist.irecv, a, left),
                                    dist.P2POp(dist.irecv, b, right)])
    if mine.is_floating_point():
        mine.neg_()
        mine.neg_()
    else:
        mine.bitwise_not_()
        mine.bitwise_not_()
    _wait(works)
    return a, b
