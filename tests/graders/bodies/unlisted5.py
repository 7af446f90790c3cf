"""Wrong bodies of the second round, part 4: the exercises the other files touch least
(the pipelined ring, the backward exchange, the neighbours, the overlap, the two-phase
exchange, snippet 3 and the tree)."""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_pipelined = copies.ring.pipelined_ring_all_reduce
reference_ring = copies.ring.ring_all_reduce


def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, n, (rank + 1) % n, (rank - 1) % n


def _wait(works):
    for work in works:
        work.wait()


def pipelined_plain_ring_for_integers(tensor, segment_bytes=4 << 20):
    """Segments for floating point; integers go round in whole chunks."""
    if tensor.is_floating_point():
        return reference_pipelined(tensor, segment_bytes)
    return reference_ring(tensor)


def backward_receives_into_grad(input_grad, prev_rank):
    """Sends the gradient, and receives the activation into a clone of it that it then
    returns; but it first clears input_grad "to free memory"."""
    received = input_grad.clone()
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, input_grad.clone(), prev_rank),
                                  dist.P2POp(dist.irecv, received, prev_rank)]))
    input_grad.zero_()
    return received


def neighbours_right_twice(tensor):
    """Sends to the right neighbour twice and to nobody on the left; from_left is taken
    from what the right one sent (right values only when the ring has 2 ranks)."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    left, right = torch.empty_like(tensor), torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, left, prev),
                                  dist.P2POp(dist.irecv, right, prev)]))
    return left, right


def step_dummy_compute_in_flight(block, weight, recv_buf):
    """The real product before posting; a small one "to overlap" while the data travels."""
    rank, n, nxt, prev = _ring()
    product = block @ weight
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    _wait(works)
    return product


def all_pairs_lengths_as_float(chunks):
    """The two phases, the lengths as float32."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, n = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(n) if p != rank]
    received = [c.clone() if i == rank else None for i, c in enumerate(chunks)]
    if not peers:
        return received
    sizes = {p: torch.zeros(1) for p in peers}
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, torch.tensor([float(chunks[p].numel())]), p, tag=SIZE_TAG)
         for p in peers] + [dist.P2POp(dist.irecv, sizes[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        received[p] = torch.empty(int(sizes[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv(
        [dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]
        + [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]))
    return received


def fixed_average_barrier_not_wait(model):
    """The exchange in one batch, then a barrier instead of wait() (snippet 3's habit)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    peers = [p for p in range(n) if p != rank]
    inbox = {peer: [torch.empty_like(g) for g in grads] for peer in peers}
    ops = [op for peer in peers for g, b in zip(grads, inbox[peer])
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, b, peer))]
    if ops:
        dist.batch_isend_irecv(ops)
        dist.barrier()
    for k, p in enumerate(model.parameters()):
        total = grads[k].clone()
        for peer in peers:
            total += inbox[peer][k]
        p.grad = total / n


def tree_chain(tensor, src):
    """A chain src -> src+1 -> ...: every rank receives once, p - 1 rounds."""
    rank, n = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % n
    if v > 0:
        dist.recv(tensor, (rank - 1) % n)
    if v < n - 1:
        dist.send(tensor, (rank + 1) % n)
    return tensor
