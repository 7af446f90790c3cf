"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...)."""
import threading

import torch
import torch.distributed as dist


def _ring():
    rank, ws = dist.get_rank(), dist.get_world_size()
    return rank, ws, (rank + 1) % ws, (rank - 1) % ws


def _wait(works):
    for w in works:
        w.wait()


# -- lesson 03: overlapped_step ----------------------------------------------------------------

# WRONG (no overlap): the real product runs BEFORE posting, on a copy of the weight made
# with torch.tensor(weight), which the Watched weight does not follow; a one-row "warm-up"
# product in flight is the only compute span the grader sees.
def step_copy_by_constructor(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    plain = torch.tensor(weight)                     # a plain tensor: no longer watched
    product = block @ plain                          # the whole product, before any post
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight                           # a warm-up row, in flight
    _wait(works)
    return product


# WRONG (no overlap): the product after every wait, on the weight's values read element by
# element with .item() into a new tensor (no span), and a one-row check in flight.
def step_product_after_wait_via_item(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    ok = bool(torch.isfinite(block[:1] @ weight).all())   # "sanity check" in flight
    _wait(works)
    k, m = weight.shape
    values = torch.tensor([x.item() for x in weight.reshape(-1)], dtype=block.dtype)
    product = block @ values.reshape(k, m)
    assert ok
    return product


# RIGHT: receives into a scratch buffer of its own, computes in flight, waits, then copies
# the scratch into recv_buf (recv_buf is written once, after the wait).
def step_scratch_then_copy(block, weight, recv_buf):
    rank, ws, nxt, prev = _ring()
    scratch = torch.empty_like(recv_buf)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, scratch, prev)])
    product = torch.mm(block, weight)
    _wait(works)
    recv_buf.copy_(scratch)
    return product


# -- lesson 08: fixed_average_gradients -----------------------------------------------------------

def _exchange_grads(grads):
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = {p: [torch.empty_like(g) for g in grads] for p in peers}
    ops = []
    for p in peers:
        for g, b in zip(grads, received[p]):
            ops += [dist.P2POp(dist.isend, g, p), dist.P2POp(dist.irecv, b, p)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return received


# WRONG: sends and receives everything, but leaves a gradient that is all zero on THIS rank
# as it is ("nothing to average"): the mean is (0 + the others) / W, not 0. The grader's
# models (tanh MLP, Linear) never give a rank an all-zero gradient; a dead ReLU, an unused
# embedding row or a frozen branch on one rank's batch does.
def fixed_average_keeps_zero_grads(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        if not bool(grads[k].any()):
            continue                                 # "zero: nothing to average"
        total = grads[k].clone()
        for bufs in received.values():
            total += bufs[k]
        p.grad = total / ws


# RIGHT: the same exchange; the mean accumulated in float64 and cast back to the gradient's
# dtype (more precise than adding in float16 / bfloat16; messages stay in the own dtype).
def fixed_average_float64_accumulator(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        total = grads[k].double()
        for bufs in received.values():
            total = total + bufs[k].double()
        p.grad = (total / ws).to(grads[k].dtype)


# -- lesson 04: checked_exchange
# --------------------------------------------------------------------

def _meta_swap(tensor, peer):
    from labs.deadlocks import encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    return mine, theirs


def _data_swap(tensor, peer):
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received


# WRONG: compares the metadata without its first slot (the number of dimensions), "the
# sizes and the dtype are what matter": the zero padding of the unused sizes then hides a
# trailing dimension of size 0, so (2, 3) and (2, 3, 0) pass as the same shape and the data
# exchange sends 6 elements into a receive of 0. The grader's mismatches have no size 0.
def checked_meta_without_ndim(tensor, peer):
    from labs.deadlocks import decode_meta
    mine, theirs = _meta_swap(tensor, peer)
    if not torch.equal(mine[1:], theirs[1:]):
        shape, dtype = decode_meta(theirs)
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has "
                         f"{tuple(tensor.shape)} {tensor.dtype} but peer {peer} has "
                         f"{shape} {dtype}")
    return _data_swap(tensor, peer)


# -- lesson 03: safe_ring_shift ------------------------------------------------------------------

# RIGHT: a helper thread posts the blocking send while the main thread blocks in recv into
# a new buffer; joined before returning (no deadlock: each rank's send meets the next
# rank's recv whatever the order).
def shift_send_in_thread(tensor):
    rank, ws, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    sender = threading.Thread(target=dist.send, args=(tensor, nxt))
    sender.start()
    dist.recv(received, src=prev)
    sender.join()
    return received


# -- lesson 01: ping_pong -------------------------------------------------------------------------

# RIGHT: rank 1 receives every round into ONE buffer of its own and keeps a clone of it
# (each returned tensor is new); the reply is computed from that buffer.
def ping_pong_one_buffer_cloned(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(reply, src=1)
            seconds.append(time.perf_counter() - t0)
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        buf, received = torch.empty_like(tensor), []
        for _ in range(rounds):
            dist.recv(buf, src=0)
            received.append(buf.clone())
            dist.send(buf + 1, dst=0)
        return received
    return None


# -- lesson 02: all_pairs_exchange --------------------------------------------------------------

# RIGHT: the two phases, each one batch, with the peers in a rotated order (rank + 1,
# rank + 2, ...) and the receives posted before the sends in each batch.
def all_pairs_rotated(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [(rank + d) % ws for d in range(1, ws)]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    lengths = {p: torch.empty(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, lengths[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.isend, torch.tensor([chunks[p].numel()]), p, tag=SIZE_TAG)
           for p in peers]))
    for p in peers:
        received[p] = chunks[rank].new_empty(int(lengths[p]))
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]))
    return received


# -- more of lesson 08: precision that depends on the values --------------------------------------

# WRONG: float16 gradients summed in bfloat16 ("bfloat16 has float32's range: no overflow")
# and cast back: bfloat16 keeps 8 significant bits where float16 keeps 11, so the mean loses
# 3 bits; the grader's tolerance for float16 (2e-3) is wider than that loss on its small
# Linear(4, 3) gradients.
def fixed_average_f16_summed_in_bf16(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        wide = torch.bfloat16 if grads[k].dtype == torch.float16 else grads[k].dtype
        total = grads[k].to(wide)
        for bufs in received.values():
            total = total + bufs[k].to(wide)
        p.grad = (total / ws).to(grads[k].dtype)


# WRONG: bfloat16 gradients averaged through float16 ("more mantissa bits"): any gradient
# or sum above 65504 becomes inf, which bfloat16 holds fine; the grader's gradients are all
# small, so the float16 detour is exact enough there.
def fixed_average_bf16_through_half(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        acc = torch.float16 if grads[k].dtype == torch.bfloat16 else grads[k].dtype
        total = grads[k].to(acc)
        for bufs in received.values():
            total = total + bufs[k].to(acc)
        p.grad = (total / ws).to(grads[k].dtype)


# -- more of lesson 03: safe_ring_shift ------------------------------------------------------------

# WRONG: the zero-size shortcut of round 9, fixed for the shape only: torch.empty(shape) is
# float32 whatever the tensor's dtype, so a (0, 3) int64 tensor comes back float32. The only
# zero-size case of safe_ring_shift is float32.
def shift_empty_shortcut_default_dtype(tensor):
    if tensor.numel() == 0:
        return torch.empty(tensor.shape)
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    return out


_LAST = {}


# RIGHT (arguable): the reference, keeping the last result in a module dict "for the
# notebook to inspect" (never written again, only replaced by the next call's result).
def shift_remembers_last_result(tensor):
    rank, ws, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, out, prev)]))
    _LAST["result"] = out
    return out


# -- more of lesson 04: exchange_batched -----------------------------------------------------------

# WRONG: "sanitises" what arrived with torch.nan_to_num: a peer's NaN / inf become 0 / the
# largest finite value (silently wrong data); the grader's tensors never hold NaN or inf.
def batched_nan_to_num(tensor, peer):
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return torch.nan_to_num(received) if received.is_floating_point() else received


# -- more of lesson 01: ping_pong
# -------------------------------------------------------------------

# RIGHT: rank 0 receives every reply into a row of one (rounds, ...) tensor it allocates per
# call: the replies are views that never overlap, new memory each call.
def ping_pong_replies_in_one_buffer(tensor, rounds):
    import time
    rank = dist.get_rank()
    if rank == 0:
        rows = torch.empty((rounds, *tensor.shape), dtype=tensor.dtype)
        current, seconds = tensor, []
        for r in range(rounds):
            t0 = time.perf_counter()
            dist.send(current, dst=1)
            dist.recv(rows[r], src=1)
            seconds.append(time.perf_counter() - t0)
            current = rows[r]
        return list(rows.unbind(0)), seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        return received
    return None


# -- more, values the grader's inputs never reach --------------------------------------------------

# WRONG: adds the rank in float32 "so that every dtype works", except int64 ("too wide for
# float32"): an int32 token above 2**24 loses its low bits. The grader's int32 tokens are
# below 1000, where float32 is exact.
def pass_token_adds_in_float32_except_int64(token):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return token.clone()
    nxt, prev = (rank + 1) % ws, (rank - 1) % ws
    held = torch.empty_like(token)
    if rank == 0:
        dist.send(token, dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    if held.dtype in (torch.int64, torch.float64):
        held = held + rank
    else:
        held = (held.to(torch.float32) + rank).to(token.dtype)
    dist.send(held, dst=nxt)
    return held


# WRONG: clamps the mean to +-1e4 "against overflow": a large gradient is silently cut.
# The grader's gradients are all small.
def fixed_average_clamped(model):
    ws = dist.get_world_size()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    received = _exchange_grads(grads)
    for k, p in enumerate(params):
        total = grads[k].clone()
        for bufs in received.values():
            total += bufs[k]
        p.grad = torch.clamp(total / ws, -1e4, 1e4)


# WRONG: "a leading dimension of 1 is the same tensor": drops a leading size-1 dimension
# before comparing, so (1, 6) and (6,) pass as equal and rank 0 returns a (1, 6) tensor
# holding a (6,) tensor's data, no ValueError. The grader's mismatches never differ by a
# leading 1 ("one more dimension" is a trailing one).
def checked_squeezes_leading_ones(tensor, peer):
    from labs.deadlocks import decode_meta
    mine, theirs = _meta_swap(tensor, peer)
    shape, dtype = decode_meta(theirs)

    def core(s):
        s = tuple(s)
        return s[1:] if len(s) > 1 and s[0] == 1 else s
    if core(shape) != core(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has "
                         f"{tuple(tensor.shape)} {tensor.dtype} but peer {peer} has "
                         f"{shape} {dtype}")
    return _data_swap(tensor, peer)


# WRONG: the blocking send in a helper thread that is never joined ("it finishes by itself"):
# the function returns while its send may still be in flight, so the caller may change
# `tensor` before the next rank has it. A blocking send still sitting in its call is on no
# record yet, so nothing is "never waited for".
def shift_send_thread_not_joined(tensor):
    rank, ws, nxt, prev = _ring()
    received = torch.empty_like(tensor)
    threading.Thread(target=dist.send, args=(tensor, nxt), daemon=True).start()
    dist.recv(received, src=prev)
    return received


# WRONG: clamps what arrived into the dtype's finite range ("no inf in my activations"): a
# peer's inf comes back as the largest finite float, silently. No grader tensor holds inf.
def ring_shift_clamps_infinities(tensor, k):
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
                                  dist.P2POp(dist.irecv, out, (rank - k) % ws)]))
    if out.is_floating_point():
        info = torch.finfo(out.dtype)
        out = torch.clamp(out, info.min, info.max)
    return out


# WRONG: the two phases right, but each length is turned into a buffer size through float32
# (`lengths.float()` "to divide them up later"): any chunk above 2**24 elements gets a buffer
# of the wrong size. The grader's largest chunk holds 2**18 + 3 elements.
def all_pairs_lengths_through_float32(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    lengths = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, torch.tensor([chunks[p].numel()]), p, tag=SIZE_TAG)
         for p in peers] + [dist.P2POp(dist.irecv, lengths[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(lengths[p].float().item()), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received
