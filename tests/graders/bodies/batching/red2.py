"""Second red team (lessons 01-04, 07-09): batching.py bodies."""
import torch
import torch.distributed as dist

from labs.batching import DATA_TAG, SIZE_TAG


def _wait(works):
    for w in works:
        w.wait()


_PAIRS = {}


def neighbours_double_buffered(tensor):
    """WRONG: (from_left, from_right) received into one of two buffer pairs kept per
    (shape, dtype), used in turn: the third call of a shape overwrites the first's."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if ws == 1:
        return tensor.clone(), tensor.clone()
    key = (tuple(tensor.shape), tensor.dtype)
    entry = _PAIRS.setdefault(key, [(torch.empty_like(tensor), torch.empty_like(tensor)),
                                    (torch.empty_like(tensor), torch.empty_like(tensor)), 0])
    fl, fr = entry[entry[2]]
    entry[2] ^= 1
    left, right = (rank - 1) % ws, (rank + 1) % ws
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, left),
                                  dist.P2POp(dist.isend, tensor, right),
                                  dist.P2POp(dist.irecv, fl, left),
                                  dist.P2POp(dist.irecv, fr, right)]))
    return fl, fr


def all_pairs_waits_size_receives_only(chunks):
    """WRONG (against the hint 'wait for all of it'): waits for the size receives only,
    allocates, posts the data batch, and waits the size sends at the end."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    mine = {p: torch.tensor([chunks[p].numel()]) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    works = dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers])
    size_sends, size_recvs = works[:len(peers)], works[len(peers):]
    _wait(size_recvs)
    for p in peers:
        received[p] = torch.empty(int(theirs[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    _wait(size_sends)
    return received


def all_pairs_skips_empty(chunks):
    """RIGHT: lengths as 0-d int64 tensors; empty chunks are neither sent nor received
    (their length says there is nothing); receives listed first; no data batch at all when
    nothing is left to move."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    received = [None] * ws
    received[rank] = chunks[rank].clone()
    if not peers:
        return received
    mine = {p: torch.tensor(chunks[p].numel(), dtype=torch.int64) for p in peers}
    theirs = {p: torch.tensor(0, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]
        + [dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]))
    dtype = chunks[rank].dtype
    ops = []
    for p in peers:
        received[p] = torch.empty(int(theirs[p].item()), dtype=dtype)
        if received[p].numel():
            ops.append(dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG))
        if chunks[p].numel():
            ops.append(dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG))
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return received


def ring_shift_isend_first_blocking_recv(tensor, k):
    """RIGHT: isend to rank + k, blocking recv from rank - k, then wait the send (cannot
    deadlock: the send is non-blocking)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    k = k % ws
    out = torch.empty_like(tensor)
    if not k:
        out.copy_(tensor)
        return out
    send = dist.isend(tensor, dst=(rank + k) % ws)
    dist.recv(out, src=(rank - k) % ws)
    send.wait()
    return out


def neighbours_one_buffer_two_rows(tensor):
    """RIGHT: both neighbours' tensors received into rows of one new (2, ...) buffer,
    returned as its two (non-overlapping) rows; ops passed with keyword arguments."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    both = torch.empty((2, *tensor.shape), dtype=tensor.dtype)
    if ws == 1:
        both[0] = tensor
        both[1] = tensor
        return both[0], both[1]
    left, right = (rank - 1) % ws, (rank + 1) % ws
    ops = [dist.P2POp(op=dist.irecv, tensor=both[0], peer=left),
           dist.P2POp(op=dist.irecv, tensor=both[1], peer=right),
           dist.P2POp(op=dist.isend, tensor=tensor, peer=left),
           dist.P2POp(op=dist.isend, tensor=tensor, peer=right)]
    _wait(dist.batch_isend_irecv(ops))
    return both[0], both[1]
