"""Second red team (lessons 01-04, 07-09): collectives.py bodies."""
import torch
import torch.distributed as dist


def _run(ops):
    if ops:
        for w in dist.batch_isend_irecv(ops):
            w.wait()


_LISTS = {}


def all_gather_double_buffered(tensor):
    """WRONG: the ring, into one of two output lists kept per (shape, dtype) and used in
    turn: the third call of a shape overwrites what the first returned."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    key = (tuple(tensor.shape), tensor.dtype)
    entry = _LISTS.setdefault(key, [[torch.empty_like(tensor) for _ in range(ws)],
                                    [torch.empty_like(tensor) for _ in range(ws)], 0])
    out = entry[entry[2]]
    entry[2] ^= 1
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    for step in range(ws - 1):
        _run([dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
              dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)])
    return list(out)


def all_gather_waits_receive_only(tensor):
    """WRONG: each step waits for its receive only (what it forwards next), the sends
    of every step are waited at the very end: steps overlap, against 'waits for both
    before the next step'."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(ws)]
    out[rank].copy_(tensor)
    nxt, prv = (rank + 1) % ws, (rank - 1) % ws
    pending = []
    for step in range(ws - 1):
        send, recv = dist.batch_isend_irecv([
            dist.P2POp(dist.isend, out[(rank - step) % ws], nxt),
            dist.P2POp(dist.irecv, out[(rank - step - 1) % ws], prv)])
        recv.wait()
        pending.append(send)
    for w in pending:
        w.wait()
    return out


def broadcast_into_temp(tensor, src):
    """RIGHT: non-src ranks receive into a fresh buffer, then copy_ it into `tensor`;
    src's isends built with a generator, group=None explicit."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor
    if rank == src:
        _run(list(dist.P2POp(dist.isend, tensor, p, group=None) for p in range(ws) if p != src))
        return tensor
    tmp = torch.zeros_like(tensor)
    _run([dist.P2POp(dist.irecv, tmp, src, group=None)])
    tensor.copy_(tmp)
    return tensor


def gather_stack_unbind(tensor, dst):
    """RIGHT: dst receives into rows of a torch.empty((ws, *shape)) and returns them as a
    list from unbind; receives posted in descending rank order."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _run([dist.P2POp(dist.isend, tensor, dst)])
        return None
    rows = torch.empty((ws, *tensor.shape), dtype=tensor.dtype)
    rows[dst] = tensor
    _run([dist.P2POp(dist.irecv, rows[p], p) for p in reversed(range(ws)) if p != dst])
    return list(rows.unbind(0))


def all_to_all_chain_of_ops(outputs, inputs):
    """RIGHT: receives first, then sends, ops built with itertools.chain."""
    import itertools
    rank, ws = dist.get_rank(), dist.get_world_size()
    if len(inputs) != ws or len(outputs) != ws:
        raise ValueError("p2p_all_to_all needs world_size inputs and outputs")
    outputs[rank].copy_(inputs[rank])
    peers = [p for p in range(ws) if p != rank]
    ops = list(itertools.chain((dist.P2POp(dist.irecv, outputs[p], p) for p in peers),
                               (dist.P2POp(dist.isend, inputs[p], p) for p in peers)))
    _run(ops)
    return outputs
