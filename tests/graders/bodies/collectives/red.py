"""Red-team bodies for lesson 07 (collectives), as they were
written; listed in tests/harness/catalogue/."""
import torch
import torch.distributed as dist


def _run(ops):
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()


# ---------------- WRONG ----------------


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
