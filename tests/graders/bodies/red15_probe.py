"""Round 15 (ours): bodies for the exercises the catalogue held least of (lessons 02, 04, 07
and 10), in kinds no list named: another algorithm than the one the exercise asks for (a
chain, a two-way ring, a relay for some k), a result that replaces the caller's memory
instead of filling it, sizes sent in another dtype of the same width, requests waited on one
side only, the own slot handed back as the input itself, one batch per peer where the
contract says one."""
import torch
import torch.distributed as dist

from labs.algorithms import flat_view, fold_in, fold_out, power_of_two_below, scratch
from labs.ring import chunk_bounds


def _run(ops):
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()


def _exchange(send, peer, recv):
    _run([dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)])


# ---- lesson 07: p2p_broadcast -----------------------------------------------------------

# WRONG: one batch per destination on src, each waited before the next (the contract: ONE
# batch; gloo's sends then wait for each receiver in turn).
def broadcast_batch_per_peer(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for peer in range(ws):
            if peer != src:
                _run([dist.P2POp(dist.isend, tensor, peer)])
    else:
        incoming = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.copy_(incoming)
    return tensor


# WRONG: the receivers swap in new memory (tensor.data = ...): a view of the caller's
# tensor (a bucket of a flat buffer) never sees the broadcast value.
def broadcast_swaps_storage(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src])
    else:
        incoming = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.data = incoming
    return tensor


# WRONG: src sends a float64 copy, the receivers receive float64 and narrow ("more precise").
def broadcast_widened(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    wide = torch.float64 if tensor.is_floating_point() else tensor.dtype
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor.to(wide), p) for p in range(ws) if p != src])
    else:
        incoming = torch.empty(tensor.shape, dtype=wide)
        _run([dist.P2POp(dist.irecv, incoming, src)])
        tensor.copy_(incoming)
    return tensor


# WRONG: src posts its sends and returns without waiting ("the receivers wait for them").
def broadcast_src_never_waits(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    ops = ([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src] if rank == src
           else [dist.P2POp(dist.irecv, tensor, src)])
    if ops:
        works = dist.batch_isend_irecv(ops)
        if rank != src:
            for w in works:
                w.wait()
    return tensor


# WRONG: a chain (src -> src+1 -> src+2 ...), every rank receives once and sends once.
def broadcast_chain_of_batches(tensor, src):
    rank, ws = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % ws
    if v:
        _run([dist.P2POp(dist.irecv, tensor, (rank - 1) % ws)])
    if v + 1 < ws:
        _run([dist.P2POp(dist.isend, tensor, (rank + 1) % ws)])
    return tensor


# ---- lesson 07: p2p_gather / p2p_all_gather ---------------------------------------------

# WRONG: the ranks that are not dst return their own tensor instead of None.
def gather_returns_own_elsewhere(tensor, dst):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return tensor
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return out


# WRONG: a bidirectional ring: each step sends to both neighbours, half the steps.
def all_gather_both_ways(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    right_steps, left_steps = ws // 2, (ws - 1) // 2     # slots from the left, from the right
    for step in range(max(right_steps, left_steps)):
        ops = []
        if step < right_steps:
            ops += [dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
                    dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)]
        if step < left_steps:
            ops += [dist.P2POp(dist.isend, out[(rank + step) % ws], prv),
                    dist.P2POp(dist.irecv, out[(rank + step + 1) % ws], nxt)]
        _run(ops)
    return out


# WRONG: the own slot is the input itself (the docstring: a copy).
def all_gather_own_slot_is_input(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank] = tensor
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for step in range(ws - 1):
        _run([dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)])
    return out


# WRONG: all_to_all in one batch per peer (the docstring: ONE batch for the whole exchange).
def all_to_all_batch_per_peer(outputs, inputs):
    rank, ws = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    for peer in range(ws):
        if peer != rank:
            _run([dist.P2POp(dist.isend, inputs[peer], peer),
                  dist.P2POp(dist.irecv, outputs[peer], peer)])
    return outputs


# ---- lesson 02 ------------------------------------------------------------------------

# WRONG: the sizes travel as float64 (the same 8 bytes as int64; the docstring: int64).
def all_pairs_sizes_float64(chunks):
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    mine = {p: torch.tensor([float(chunks[p].numel())], dtype=torch.float64) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.float64) for p in peers}
    _run([dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
         + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers])
    for p in peers:
        received[p] = torch.empty(int(theirs[p].item()), dtype=chunks[rank].dtype)
    _run([dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
         + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers])
    return received


# WRONG: with two ranks, one message each way, and the same tensor returned twice.
def neighbours_once_for_two(tensor):
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % ws, (rank + 1) % ws
    if ws == 2:
        got = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, left), dist.P2POp(dist.irecv, got, left)])
        return got, got
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    _run([dist.P2POp(dist.isend, tensor, left), dist.P2POp(dist.isend, tensor, right),
          dist.P2POp(dist.irecv, from_left, left), dist.P2POp(dist.irecv, from_right, right)])
    return from_left, from_right


# WRONG: a shift by k relayed one hop at a time when k is small ("fewer long messages").
def shift_relayed_for_small_k(tensor, k):
    rank, ws = dist.get_rank(), dist.get_world_size()
    k %= ws
    if k == 0:
        return tensor.clone()
    if k > 2:
        out = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, (rank + k) % ws),
              dist.P2POp(dist.irecv, out, (rank - k) % ws)])
        return out
    current = tensor.clone()
    for _ in range(k):
        nxt = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, current, (rank + 1) % ws),
              dist.P2POp(dist.irecv, nxt, (rank - 1) % ws)])
        current = nxt
    return current


# ---- lesson 04 ------------------------------------------------------------------------

# WRONG: "parity" taken from the lower rank of the pair: with pairs (1, 2) rank 1 (odd) sends
# first. Never deadlocks, but it is not the parity order the exercise asks for.
def parity_by_lower_rank(tensor, peer):
    received = torch.empty_like(tensor)
    if dist.get_rank() < peer:
        dist.send(tensor, dst=peer)
        dist.recv(received, src=peer)
    else:
        dist.recv(received, src=peer)
        dist.send(tensor, dst=peer)
    return received


# WRONG: the exchange's send as isend, waited only after the receive.
def parity_isend_waited_late(tensor, peer):
    received = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 0:
        work = dist.isend(tensor, dst=peer)
        dist.recv(received, src=peer)
        work.wait()
    else:
        dist.recv(received, src=peer)
        dist.send(tensor, dst=peer)
    return received


# ---- lesson 10 ------------------------------------------------------------------------

def _hd(flat, rank, q, masks):
    bounds = chunk_bounds(flat.numel(), q)

    def chunks(lo, hi):
        return flat[bounds[lo][0]:bounds[hi - 1][1]]

    lo, hi, steps = 0, q, []
    for mask in masks:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
        mine = chunks(*keep)
        incoming = scratch(mine.numel(), flat.dtype)
        _exchange(chunks(*give), rank ^ mask, incoming)
        mine.add_(incoming)
        steps.append((rank ^ mask, keep, give))
        lo, hi = keep
    for peer, keep, give in reversed(steps):
        _exchange(chunks(*keep), peer, chunks(*give))


# RIGHT: the halving with the nearest partner first (mask 1, 2, ... q/2), on chunk_bounds'
# chunks: the same algorithm, the chunks' owners renumbered (the docstring allows it).
def hd_nearest_first(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            q = power_of_two_below(p)
            _hd(flat, dist.get_rank(), q, [1 << i for i in range(q.bit_length() - 1)])
        fold_out(flat)
    return tensor


# WRONG: reduce-scatter by halving, then the all-gather as recursive doubling of the WHOLE
# tensor ("simpler"): the same partners, more bytes in the second half.
def hd_gather_whole(tensor):
    flat = flat_view(tensor)
    p = dist.get_world_size()
    if p > 1:
        if fold_in(flat):
            q, rank = power_of_two_below(p), dist.get_rank()
            bounds = chunk_bounds(flat.numel(), q)
            lo, hi, mask = 0, q, q // 2
            while mask:
                mid = (lo + hi) // 2
                keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
                mine = flat[bounds[keep[0]][0]:bounds[keep[1] - 1][1]]
                incoming = scratch(mine.numel(), flat.dtype)
                _exchange(flat[bounds[give[0]][0]:bounds[give[1] - 1][1]], rank ^ mask, incoming)
                mine.add_(incoming)
                lo, hi = keep
                mask //= 2
            own = flat[bounds[lo][0]:bounds[hi - 1][1]].clone()
            flat.zero_()
            flat[bounds[lo][0]:bounds[hi - 1][1]] = own
            mask = 1
            while mask < q:          # zeros elsewhere: adding whole tensors gathers them
                incoming = scratch(flat.numel(), flat.dtype)
                _exchange(flat, rank ^ mask, incoming)
                flat.add_(incoming)
                mask <<= 1
        fold_out(flat)
    return tensor
