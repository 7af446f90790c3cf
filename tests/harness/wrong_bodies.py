"""Known wrong exercise bodies, each named after the exercise it gets wrong: the graders'
own tests (test_graders.py) grade them, with impl="tests.harness.wrong_bodies", and expect
a failure that says what is wrong. Each one gets the values right where it can, so that
only the check under test can catch it."""
import torch
import torch.distributed as dist


def ring_all_reduce(tensor):
    """dist.all_reduce, then rank 0 ends one too high."""
    dist.all_reduce(tensor)
    if dist.get_rank() == 0 and tensor.numel():
        tensor.view(-1)[-1] += 1
    return tensor


def safe_ring_shift(tensor):
    """Right values, maybe, but it returns before waiting for its receive."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    received = torch.empty_like(tensor)
    dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + 1) % world_size),
                            dist.P2POp(dist.irecv, received, (rank - 1) % world_size)])
    return received


def exchange_with_neighbours(tensor):
    """Right values, but four separate isend/irecv calls instead of one batch."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return tensor.clone(), tensor.clone()
    left, right = (rank - 1) % world_size, (rank + 1) % world_size
    from_left, from_right = torch.empty_like(tensor), torch.empty_like(tensor)
    works = [dist.isend(tensor, left), dist.isend(tensor, right),
             dist.irecv(from_left, left), dist.irecv(from_right, right)]
    for work in works:
        work.wait()
    return from_left, from_right


def pass_token(token):
    """Right values, from a broadcast: not point to point."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    start = token.clone()
    dist.broadcast(start, 0)
    return start + (sum(range(world_size)) if rank == 0 else sum(range(rank + 1)))


def exchange_batched(tensor, peer):
    """Receives into the tensor it sends, and returns it."""
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor.clone(), peer),
                                    dist.P2POp(dist.irecv, tensor, peer)])
    for work in works:
        work.wait()
    return tensor


def swap_with_partner(tensor):
    """A copy of its own tensor on every rank: no exchange at all."""
    return tensor.clone()
