"""Probe bodies for lesson 07 (collectives)."""
import torch
import torch.distributed as dist


def _run(ops):
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()


# ---------------- WRONG ----------------

def broadcast_data_swap(tensor, src):
    """W: not in place: receives into a fresh tensor, then rebinds tensor.data."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src])
        return tensor
    fresh = torch.empty_like(tensor)
    _run([dist.P2POp(dist.irecv, fresh, src)])
    tensor.data = fresh
    return tensor


def broadcast_then_gossip(tensor, src):
    """W: the star, then every non-src rank also passes its copy on to the next non-src
    rank "to double-check" (p-2 extra whole-tensor messages, never used)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p != src])
        return tensor
    _run([dist.P2POp(dist.irecv, tensor, src)])
    others = [p for p in range(ws) if p != src]
    if len(others) > 1:
        i = others.index(rank)
        check = torch.empty_like(tensor)
        _run([dist.P2POp(dist.isend, tensor, others[(i + 1) % len(others)]),
              dist.P2POp(dist.irecv, check, others[(i - 1) % len(others)])])
    return tensor


def broadcast_halves(tensor, src):
    """W?: src sends every tensor in two messages (halves): 2(p-1) messages."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    h = flat.numel() // 2
    parts = [flat[:h], flat[h:]]
    if rank == src:
        _run([dist.P2POp(dist.isend, part, p) for p in range(ws) if p != src
              for part in parts if part.numel()])
    else:
        _run([dist.P2POp(dist.irecv, part, src) for part in parts if part.numel()])
    return tensor


def broadcast_relay_by_rank1(tensor, src):
    """W: src sends only to one rank, which sends to all others (a 2-hop star: one rank
    does all the work, p-1 rounds at that rank)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor
    hub = (src + 1) % ws
    if rank == src:
        _run([dist.P2POp(dist.isend, tensor, hub)])
    elif rank == hub:
        _run([dist.P2POp(dist.irecv, tensor, src)])
        _run([dist.P2POp(dist.isend, tensor, p) for p in range(ws) if p not in (src, hub)])
    else:
        _run([dist.P2POp(dist.irecv, tensor, hub)])
    return tensor


def gather_with_side_traffic(tensor, dst):
    """W: every non-dst rank also sends its tensor to its non-dst neighbour (wasted)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        others = [p for p in range(ws) if p != dst]
        ops = [dist.P2POp(dist.isend, tensor, dst)]
        if len(others) > 1:
            i = others.index(rank)
            junk = torch.empty_like(tensor)
            ops += [dist.P2POp(dist.isend, tensor, others[(i + 1) % len(others)]),
                    dist.P2POp(dist.irecv, junk, others[(i - 1) % len(others)])]
        _run(ops)
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return out


def gather_twice(tensor, dst):
    """W: every rank sends its tensor to dst twice (two rounds), dst keeps the 2nd."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return out


def gather_temp_mutate(tensor, dst):
    """W: mutates the caller's tensor while sending (negates it, sends, negates back);
    dst negates what it received. Input modified during the call."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if tensor.dtype == torch.bool:
        raise TypeError
    if rank != dst:
        tensor.neg_()
        _run([dist.P2POp(dist.isend, tensor, dst)])
        tensor.neg_()
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    for p in range(ws):
        if p != dst:
            out[p].neg_()
    return out


def all_gather_sends_waited_late(tensor):
    """W?: the ring, each step's batch posted, only the receive waited; every send waited
    at the very end (the docstring: waits for both before the next step)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    sends = []
    for s in range(ws - 1):
        w = dist.batch_isend_irecv([dist.P2POp(dist.isend, out[(rank - s) % ws], nxt),
                                    dist.P2POp(dist.irecv, out[(rank - s - 1) % ws], prv)])
        w[1].wait()
        sends.append(w[0])
    for w in sends:
        w.wait()
    return out


def all_gather_own_slot_is_received(tensor):
    """W: the ring runs W steps (one extra), so its own slot comes back round the ring."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    tensor.clone()
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for s in range(ws - 1):
        _run([dist.P2POp(dist.isend, out[(rank - s) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - s - 1) % ws], prv)])
    return out


def all_to_all_data_swap(outputs, inputs):
    """W: fills NEW tensors and rebinds outputs[i].data (the caller's memory untouched:
    views or aliases of outputs never see the data)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    fresh = [torch.empty_like(o) for o in outputs]
    fresh[rank].copy_(inputs[rank])
    ops = []
    for p in range(ws):
        if p != rank:
            ops.append(dist.P2POp(dist.isend, inputs[p], p))
            ops.append(dist.P2POp(dist.irecv, fresh[p], p))
    _run(ops)
    for o, f in zip(outputs, fresh):
        o.data = f
    return outputs


def all_to_all_inputs_temp(outputs, inputs):
    """W: sends by temporarily storing into inputs... control: swaps inputs order."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    ops = []
    for p in range(ws):
        if p != rank:
            ops.append(dist.P2POp(dist.isend, inputs[p], p))
            ops.append(dist.P2POp(dist.irecv, outputs[p], p))
    _run(ops)
    return outputs


# ---------------- RIGHT ----------------

def broadcast_blocking_pg_group(tensor, src):
    """R: the star with dist.P2POp over dist.group.WORLD and tags per peer."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    g = dist.group.WORLD
    if rank == src:
        ops = [dist.P2POp(dist.isend, tensor, p, group=g, tag=p) for p in range(ws) if p != src]
    else:
        ops = [dist.P2POp(dist.irecv, tensor, src, group=g, tag=rank)]
    _run(ops)
    return tensor


def gather_into_one_buffer(tensor, dst):
    """R: dst receives into rows of one (ws, ...) buffer and returns unbind() views."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    buf = torch.empty((ws, *tensor.shape), dtype=tensor.dtype)
    buf[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, buf[p], p) for p in range(ws) if p != dst])
    return list(buf.unbind(0))


def all_gather_forward_scratch(tensor):
    """R: the ring forwarding a scratch buffer: receive into tmp, copy into slot, send the
    copy next step (a fresh tmp each step)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [None] * ws
    out[rank] = tensor.clone()
    cur = out[rank]
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for s in range(ws - 1):
        tmp = torch.empty_like(tensor)
        _run([dist.P2POp(dist.irecv, tmp, prv), dist.P2POp(dist.isend, cur, nxt)])
        out[(rank - s - 1) % ws] = tmp
        cur = tmp
    return out


def all_to_all_zip_style(outputs, inputs):
    """R: peers in shifted order (rank+1, rank+2, ...), recv before send in the batch."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    ops = []
    for k in range(1, ws):
        to, frm = (rank + k) % ws, (rank - k) % ws
        ops.append(dist.P2POp(dist.irecv, outputs[frm], frm))
        ops.append(dist.P2POp(dist.isend, inputs[to], to))
    outputs[rank][...] = inputs[rank]
    _run(ops)
    return outputs


def gather_returns_tuple(tensor, dst):
    """W: dst returns a tuple (the contract: a list)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[dst].copy_(tensor)
    _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
    return tuple(out)


def all_gather_returns_tuple(tensor):
    """W: a tuple instead of a list."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for s in range(ws - 1):
        _run([dist.P2POp(dist.isend, out[(rank - s) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - s - 1) % ws], prv)])
    return tuple(out)
