"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks."""
import torch
import torch.distributed as dist

from tests.graders.bodies import copies

reference_all_to_all = copies.collectives.p2p_all_to_all
reference_exchange = copies.deadlocks.exchange_batched
reference_ring_avg = copies.gradients.average_gradients_ring
reference_rotate = copies.patterns.rotate_kv
reference_step = copies.waiting.overlapped_step
reference_shift = copies.waiting.safe_ring_shift


def _large():
    return dist.get_world_size() > 4


def shift_builtin_beyond_4(tensor):
    if not _large():
        return reference_shift(tensor)
    rank, n = dist.get_rank(), dist.get_world_size()
    everyone = [torch.empty_like(tensor) for _ in range(n)]
    dist.all_gather(everyone, tensor)
    return everyone[(rank - 1) % n]


def batched_builtin_at_8(tensor, peer):
    if dist.get_world_size() != 8:
        return reference_exchange(tensor, peer)
    everyone = [torch.empty_like(tensor) for _ in range(8)]
    dist.all_gather(everyone, tensor)
    return everyone[peer]


def step_blocking_beyond_4(block, weight, recv_buf):
    """Overlap up to 4 ranks; from 5 on, blocking transfers in parity order, then compute."""
    if not _large():
        return reference_step(block, weight, recv_buf)
    rank, n = dist.get_rank(), dist.get_world_size()
    ops = [dist.P2POp(dist.isend, block, (rank + 1) % n),
           dist.P2POp(dist.irecv, recv_buf, (rank - 1) % n)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return block @ weight


def all_to_all_builtin_beyond_4(outputs, inputs):
    if not _large():
        return reference_all_to_all(outputs, inputs)
    dist.all_to_all(outputs, inputs)
    return outputs


def ring_avg_builtin_at_7(model):
    if dist.get_world_size() != 7:
        return reference_ring_avg(model)
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= 7


def rotate_waits_beyond_4(k, v):
    k_next, v_next, works = reference_rotate(k, v)
    if _large():
        for work in works:
            work.wait()
    return k_next, v_next, works


def neighbours_one_tensor_twice(tensor):
    """With 2 ranks left and right are the same rank: it returns one buffer twice."""
    exchange_with_neighbours = copies.batching.exchange_with_neighbours
    left, right = exchange_with_neighbours(tensor)
    return (left, left) if dist.get_world_size() == 2 else (left, right)


def neighbours_one_copy_twice_at_one_rank(tensor):
    """With one rank both neighbours are itself: one copy, returned as both."""
    exchange_with_neighbours = copies.batching.exchange_with_neighbours
    if dist.get_world_size() == 1:
        copy = tensor.clone()
        return copy, copy
    return exchange_with_neighbours(tensor)
