"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic.

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others.py.)
"""

import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies import copies
from tests.graders.bodies._shared import ring_places as _ring
reference_pipelined = copies.ring.pipelined_ring_all_reduce


def _wait(works):
    for work in works:
        work.wait()


# lesson 05 ------------------------------------------------------------------------------------

def rs_on_data_tagged(tensor):
    """Through `.data`, a tag per step, a fresh receive buffer each step."""
    rank, n, nxt, prev = _ring()
    flat = tensor.data.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]
    for step in range(n - 1):
        target = chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(target)
        _wait(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, chunks[(rank - step - 1) % n], nxt, tag=step),
            dist.P2POp(dist.irecv, incoming, prev, tag=step)]))
        torch.add(target, incoming, out=target)
    return chunks[rank]


def ring_two_phases_own_buffers(tensor):
    """Reduce-scatter and all-gather written out, blocking parity order, receives into a
    contiguous scratch then copied (the tensor's own memory only touched by copy_)."""
    rank, n, nxt, prev = _ring()
    flat = tensor.view(-1)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), n)]

    def exchange(send, recv):
        if rank % 2 == 0:
            dist.send(send.contiguous(), nxt)
            dist.recv(recv, prev)
        else:
            dist.recv(recv, prev)
            dist.send(send.contiguous(), nxt)

    for step in range(n - 1):
        target = chunks[(rank - step - 2) % n]
        incoming = torch.empty_like(target)
        exchange(chunks[(rank - step - 1) % n], incoming)
        target += incoming
    for step in range(n - 1):
        target = chunks[(rank - step - 1) % n]
        incoming = torch.empty_like(target)
        exchange(chunks[(rank - step) % n], incoming)
        target.copy_(incoming)
    return tensor


def pipelined_with_barriers(tensor, segment_bytes=4 << 20):
    dist.barrier()
    reference_pipelined(tensor, segment_bytes)
    dist.barrier()
    return tensor
