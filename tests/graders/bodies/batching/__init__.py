"""Lesson 02 (exchange_with_neighbours, ring_shift, all_pairs_exchange): wrong bodies, and
correct ones in another style."""
import torch
import torch.distributed as dist

from labs.batching import DATA_TAG, SIZE_TAG


def _neighbours():
    rank, n = dist.get_rank(), dist.get_world_size()
    return (rank - 1) % n, (rank + 1) % n


def _wait(works):
    for work in works:
        work.wait()


def neighbours_loose(tensor):
    """Right values, but four separate isend/irecv calls instead of one batch."""
    if dist.get_world_size() == 1:
        return tensor.clone(), tensor.clone()
    left, right = _neighbours()
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    _wait([dist.isend(tensor, left), dist.isend(tensor, right),
           dist.irecv(from_left, left), dist.irecv(from_right, right)])
    return from_left, from_right


def neighbours_two_batches(tensor):
    """Right values, one batch per direction: two batches where one is the point."""
    if dist.get_world_size() == 1:
        return tensor.clone(), tensor.clone()
    left, right = _neighbours()
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, right),
                                  dist.P2POp(dist.irecv, from_left, left)]))
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, left),
                                  dist.P2POp(dist.irecv, from_right, right)]))
    return from_left, from_right


def neighbours_same_at_one_rank(tensor):
    """Right with several ranks; with one, it hands back the caller's tensor twice."""
    if dist.get_world_size() == 1:
        return tensor, tensor
    return neighbours_receives_first(tensor)


def neighbours_receives_first(tensor):
    """Correct: receives listed first, built in a loop over the two sides."""
    if dist.get_world_size() == 1:
        return tensor.clone(), tensor.clone()
    sides = _neighbours()
    received = [torch.empty_like(tensor) for _ in sides]
    ops = [dist.P2POp(dist.irecv, buf, peer) for buf, peer in zip(received, sides)]
    ops += [dist.P2POp(dist.isend, tensor, peer) for peer in sides]
    _wait(dist.batch_isend_irecv(ops))
    return tuple(received)


def shift_relay(tensor, k):
    """Right values, by k shifts of one: the tensor is relayed through k - 1 ranks."""
    rank, n = dist.get_rank(), dist.get_world_size()
    current = tensor.clone()
    for _ in range(k % n):
        nxt = torch.empty_like(current)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, current, (rank + 1) % n),
                                      dist.P2POp(dist.irecv, nxt, (rank - 1) % n)]))
        current = nxt
    return current


def shift_same_at_k0(tensor, k):
    """Right values, but when nothing moves it returns the caller's tensor itself."""
    n = dist.get_world_size()
    if k % n == 0:
        return tensor
    return shift_unbatched(tensor, k)


def shift_unbatched(tensor, k):
    """Correct: isend and irecv, no batch (ring_shift does not require one)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if k % n == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    _wait([dist.irecv(out, (rank - k) % n), dist.isend(tensor, (rank + k) % n)])
    return out


def all_pairs_data_in_size_batch(chunks):
    """Right values, but the chunks are sent in the batch of lengths (the receivers cannot
    have allocated their buffers yet); the second batch only receives."""
    rank, n = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(n) if p != rank]
    received = [chunks[rank].clone() if p == rank else None for p in range(n)]
    if not peers:
        return received
    sizes = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    ops = [dist.P2POp(dist.isend, torch.tensor([chunks[p].numel()]), p, tag=SIZE_TAG)
           for p in peers]
    ops += [dist.P2POp(dist.irecv, sizes[p], p, tag=SIZE_TAG) for p in peers]
    ops += [dist.P2POp(dist.isend, chunks[p].contiguous(), p, tag=DATA_TAG) for p in peers]
    first = dist.batch_isend_irecv(ops)
    _wait(first[:2 * len(peers)])
    for p in peers:
        received[p] = torch.empty(int(sizes[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG)
                                  for p in peers]))
    _wait(first[2 * len(peers):])
    return received


def all_pairs_same_at_one_rank(chunks):
    """Right values, but its own entry is the caller's chunk, not a copy."""
    received = all_pairs_by_peer(chunks)
    received[dist.get_rank()] = chunks[dist.get_rank()]
    return received


def all_pairs_by_peer(chunks):
    """Wrong on a strided chunk (sent as is: gloo refuses it); per-peer (send, receive)
    pairs, lengths as a dict, receives first."""
    rank, n = dist.get_rank(), dist.get_world_size()
    out = {rank: chunks[rank].clone()}
    peers = [p for p in range(n) if p != rank]
    if peers:
        lengths = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
        mine = {p: torch.tensor([len(chunks[p])], dtype=torch.int64) for p in peers}
        _wait(dist.batch_isend_irecv(
            [op for p in peers for op in (dist.P2POp(dist.irecv, lengths[p], p, tag=SIZE_TAG),
                                          dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG))]))
        out.update({p: chunks[rank].new_empty(int(lengths[p])) for p in peers})
        _wait(dist.batch_isend_irecv(
            [op for p in peers for op in (dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG),
                                          dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG))]))
    return [out[p] for p in range(n)]
