"""Correct bodies in other styles than solutions/, second round: what a correct learner may
write and the contract allows. Each must pass its grader: blocking calls where allowed,
several batches where allowed, extra synchronisation that moves no data, tags, another
order inside a round, waiting through a future, a contiguous staging buffer, `.data`,
the process group passed explicitly, other torch functions for the arithmetic."""
import time

import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from solutions.ring import ring_all_reduce as reduce_around_the_ring
from tests.graders.bodies import copies

reference_all_gather = copies.collectives.p2p_all_gather
reference_pipelined = copies.ring.pipelined_ring_all_reduce


def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, n, (rank + 1) % n, (rank - 1) % n


def _wait(works):
    for work in works:
        work.wait()


# lesson 01 ------------------------------------------------------------------------------------

def ping_pong_zeros_like_isend(tensor, rounds):
    """isend + wait and irecv + wait, buffers from zeros_like, the clock from time.monotonic."""
    rank = dist.get_rank()
    if rank > 1:
        return None
    current, replies, seconds, received = tensor, [], [], []
    for _ in range(rounds):
        buf = torch.zeros_like(tensor)
        if rank == 0:
            t0 = time.monotonic()
            dist.isend(current, 1).wait()
            dist.irecv(buf, 1).wait()
            seconds.append(time.monotonic() - t0)
            replies.append(buf)
            current = buf
        else:
            dist.irecv(buf, 0).wait()
            received.append(buf)
            dist.isend(buf + 1, 0).wait()
    return (replies, seconds) if rank == 0 else received


def pass_token_tagged_world_group(token):
    """Blocking, a tag of its own, the world group passed explicitly."""
    world = dist.group.WORLD
    rank, n = dist.get_rank(world), dist.get_world_size(world)
    if n == 1:
        return token.detach().clone()
    held = torch.zeros_like(token)
    if rank == 0:
        dist.send(token, (rank + 1) % n, group=world, tag=7)
        dist.recv(held, (rank - 1) % n, group=world, tag=7)
        return held
    dist.recv(held, (rank - 1) % n, group=world, tag=7)
    held.add_(rank)
    dist.send(held, (rank + 1) % n, group=world, tag=7)
    return held


# lesson 02 ------------------------------------------------------------------------------------

def neighbours_staged_group_peer(tensor):
    """group_peer instead of peer, through a contiguous staging copy, receives first."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    world = dist.group.WORLD
    staged = tensor.contiguous().clone()
    left, right = torch.empty(tensor.shape, dtype=tensor.dtype), torch.empty(
        tensor.shape, dtype=tensor.dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, right, group=world, group_peer=nxt),
                                  dist.P2POp(dist.irecv, left, group=world, group_peer=prev),
                                  dist.P2POp(dist.isend, staged, group=world, group_peer=nxt),
                                  dist.P2POp(dist.isend, staged, group=world, group_peer=prev)]))
    return left, right


def ring_shift_normalised_isend(tensor, k):
    """k normalised to the shorter way round, isend/irecv, the receive posted first."""
    rank, n = dist.get_rank(), dist.get_world_size()
    k %= n
    if k == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    receive = dist.irecv(out, (rank - k + n) % n)
    send = dist.isend(tensor, (rank + k) % n)
    list(map(lambda w: w.wait(), (send, receive)))
    return out


def all_pairs_receives_first_monitored(chunks):
    """The two phases, receives before sends, a monitored barrier at the end; wrong on a
    strided chunk (sent as is)."""
    from labs.batching import DATA_TAG, SIZE_TAG
    rank, n = dist.get_rank(), dist.get_world_size()
    received = [c.clone() if i == rank else None for i, c in enumerate(chunks)]
    peers = [p for p in range(n) if p != rank]
    if peers:
        sizes = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
        mine = {p: torch.tensor([chunks[p].numel()]) for p in peers}
        _wait(dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, sizes[p], p, tag=SIZE_TAG) for p in peers]
            + [dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]))
        for p in peers:
            received[p] = chunks[rank].new_empty(int(sizes[p]))
        _wait(dist.batch_isend_irecv(
            [dist.P2POp(dist.irecv, received[p], p, tag=DATA_TAG) for p in peers]
            + [dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]))
    dist.monitored_barrier()
    return received


# lesson 03 ------------------------------------------------------------------------------------

def shift_monitored_barrier_reverse_waits(tensor):
    """Waits in reverse order, a monitored barrier before and after."""
    rank, n, nxt, prev = _ring()
    dist.monitored_barrier()
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, prev),
                                    dist.P2POp(dist.isend, tensor, nxt)])
    for work in reversed(works):
        work.wait()
    dist.monitored_barrier()
    return out


def step_einsum_tagged(block, weight, recv_buf):
    """A tag, the product with einsum, each request waited with a timeout."""
    from datetime import timedelta
    rank, n, nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt, tag=3),
                                    dist.P2POp(dist.irecv, recv_buf, prev, tag=3)])
    product = torch.einsum("nk,km->nm", block, weight)
    for work in works:
        work.wait(timeout=timedelta(seconds=30))
    return product


# lesson 04 ------------------------------------------------------------------------------------

def batched_tagged_reverse(tensor, peer):
    """The receive first in the batch, a tag, waits in reverse order."""
    out = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer, tag=5),
                                    dist.P2POp(dist.isend, tensor, peer, tag=5)])
    for work in works[::-1]:
        work.wait()
    return out


def parity_world_group(tensor, peer):
    """Parity order, the group and the tag passed explicitly."""
    world = dist.group.WORLD
    out = torch.zeros_like(tensor)
    if dist.get_rank(world) % 2 == 0:
        dist.send(tensor, dst=peer, group=world, tag=1)
        dist.recv(out, src=peer, group=world, tag=1)
    else:
        dist.recv(out, src=peer, group=world, tag=1)
        dist.send(tensor, dst=peer, group=world, tag=1)
    return out


def checked_two_by_three(tensor, peer):
    """Its own wording ('2x3'), isend/irecv pairs for both phases."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, theirs, peer),
                                    dist.P2POp(dist.isend, mine, peer)])
    _wait(works)
    shape, dtype = decode_meta(theirs)
    if tuple(shape) != tuple(tensor.shape) or dtype != tensor.dtype:
        def show(s):
            return "x".join(map(str, s)) or "scalar"
        raise ValueError(f"mismatch: mine {show(tensor.shape)} {dtype_name(tensor.dtype)}, "
                         f"peer's {show(shape)} {dtype_name(dtype)}")
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, out, peer),
                                  dist.P2POp(dist.isend, tensor, peer)]))
    return out


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


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


# lesson 06 ------------------------------------------------------------------------------------

def a2a_receives_first_per_param(model):
    """Receives posted before sends, rank order summed with torch.stack().sum(0)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    inbox = [[None] * n for _ in params]
    recvs, sends = [], []
    for i, p in enumerate(params):
        for peer in range(n):
            if peer == rank:
                inbox[i][peer] = p.grad.detach().clone()
                continue
            inbox[i][peer] = torch.empty_like(p.grad, memory_format=torch.contiguous_format)
            recvs.append(dist.P2POp(dist.irecv, inbox[i][peer], peer))
            sends.append(dist.P2POp(dist.isend, p.grad.contiguous(), peer))
    _wait(dist.batch_isend_irecv(recvs + sends))
    for p, bufs in zip(params, inbox):
        total = bufs[0].clone()
        for b in bufs[1:]:
            total.add_(b)
        p.grad.copy_(total.div_(n))
    return None


def ring_avg_flatten_dense(model):
    """torch._utils' flatten/unflatten, one ring per dtype, with the ring of lesson 05."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
    from solutions.ring import ring_all_reduce
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = _flatten_dense_tensors(grads)
        ring_all_reduce(flat)
        flat.div_(dist.get_world_size())
        for g, piece in zip(grads, _unflatten_dense_tensors(flat, grads)):
            g.copy_(piece)
    return None


def ring_avg_aliased(model):
    """The ring imported under another name; a flat buffer per dtype with torch.cat."""
    by_dtype = {}
    for p in model.parameters():
        if p.grad is not None:
            by_dtype.setdefault(p.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = torch.cat([g.flatten() for g in grads])
        reduce_around_the_ring(flat)
        flat /= dist.get_world_size()
        for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
            g.copy_(piece.reshape(g.shape))
    return None


def bucketed_with_barrier(model, bucket_bytes):
    """DDP's plan, a barrier first, each bucket through the aliased ring."""
    from labs.gradients import plan_buckets
    dist.barrier()
    for bucket in plan_buckets([p for p in model.parameters() if p.grad is not None],
                               bucket_bytes):
        flat = torch.cat([p.grad.reshape(-1) for p in bucket])
        reduce_around_the_ring(flat)
        flat /= dist.get_world_size()
        for p, piece in zip(bucket, flat.split([p.numel() for p in bucket])):
            p.grad.copy_(piece.view_as(p.grad))
    return None


# lesson 07 ------------------------------------------------------------------------------------

def broadcast_chain(tensor, src):
    """Right values, another method: a chain (each rank forwards once), not the star."""
    rank, n = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % n
    if v > 0:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.irecv, tensor, (rank - 1) % n)]))
    if v < n - 1:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, (rank + 1) % n)]))
    return tensor


def gather_receives_in_reverse(tensor, dst):
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank != dst:
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, dst)]))
        return None
    out = [tensor.clone() if r == dst else torch.empty_like(tensor) for r in range(n)]
    ops = [dist.P2POp(dist.irecv, out[r], r) for r in reversed(range(n)) if r != dst]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return out


def all_gather_with_barrier(tensor):
    out = reference_all_gather(tensor)
    dist.barrier()
    return out


def all_to_all_descending(outputs, inputs):
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    ops = []
    for peer in reversed(range(n)):
        if peer != rank:
            ops += [dist.P2POp(dist.irecv, outputs[peer], peer),
                    dist.P2POp(dist.isend, inputs[peer], peer)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return outputs
