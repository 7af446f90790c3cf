"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only."""
import torch
import torch.distributed as dist

from labs.ring import chunk_bounds
from tests.graders.bodies import copies

reference_doubling = copies.algorithms.recursive_doubling_all_reduce
reference_exchange = copies.deadlocks.exchange_batched
reference_a2a = copies.gradients.average_gradients_all_to_all
reference_forward = copies.patterns.send_forward_recv_backward
reference_ring = copies.ring.ring_all_reduce


def _ring():
    rank, n = dist.get_rank(), dist.get_world_size()
    return rank, n, (rank + 1) % n, (rank - 1) % n


def _wait(works):
    for work in works:
        work.wait()


# lesson 01 ------------------------------------------------------------------------------------

def ping_pong_subgroup_broadcast(tensor, rounds):
    """Ranks 0 and 1 bounce the tensor with broadcasts inside a subgroup of their own."""
    pair = dist.new_group([0, 1])
    rank = dist.get_rank()
    if rank > 1:
        return None
    current, replies, seconds, received = tensor.clone(), [], [], []
    for _ in range(rounds):
        dist.broadcast(current, 0, group=pair)
        if rank == 1:
            received.append(current.clone())
            current += 1
        dist.broadcast(current, 1, group=pair)
        replies.append(current.clone())
        seconds.append(1e-3)
    return (replies, seconds) if rank == 0 else received


def pass_token_send_object(token):
    """The ring, each hop with send_object_list / recv_object_list (pickled bytes)."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return token.clone()
    if rank == 0:
        dist.send_object_list([token], dst=nxt)
        box = [None]
        dist.recv_object_list(box, src=prev)
        return box[0]
    box = [None]
    dist.recv_object_list(box, src=prev)
    held = box[0] + rank
    dist.send_object_list([held], dst=nxt)
    return held


def pass_token_isend_unwaited(token):
    """Forwards with isend and never waits for it."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return token.clone()
    held = torch.empty_like(token)
    if rank == 0:
        dist.isend(token.clone(), dst=nxt)
        dist.recv(held, src=prev)
        return held
    dist.recv(held, src=prev)
    held += rank
    dist.isend(held, dst=nxt)
    return held.clone()


# lesson 02 ------------------------------------------------------------------------------------

def neighbours_float_as_int(tensor):
    """The bytes of a float tensor moved as integers of the same width."""
    rank, n, nxt, prev = _ring()
    if n == 1:
        return tensor.clone(), tensor.clone()
    as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    wire = tensor.view(as_int) if tensor.is_floating_point() else tensor
    left, right = torch.empty_like(wire), torch.empty_like(wire)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, wire, prev),
                                  dist.P2POp(dist.isend, wire, nxt),
                                  dist.P2POp(dist.irecv, left, prev),
                                  dist.P2POp(dist.irecv, right, nxt)]))
    return left.view(tensor.dtype), right.view(tensor.dtype)


def ring_shift_any_source(tensor, k):
    """One send to rank + k, and a receive from whoever sends: right values, any source."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if k % n == 0:
        return tensor.clone()
    out = torch.empty_like(tensor)
    send = dist.isend(tensor, (rank + k) % n)
    dist.recv(out)
    send.wait()
    return out


def all_pairs_sizes_by_object(chunks):
    """The lengths through all_gather_object, the chunks point to point."""
    rank, n = dist.get_rank(), dist.get_world_size()
    sizes = [None] * n
    dist.all_gather_object(sizes, [c.numel() for c in chunks])
    received = [None] * n
    received[rank] = chunks[rank].clone()
    ops = []
    for peer in range(n):
        if peer != rank:
            received[peer] = torch.empty(sizes[peer][rank], dtype=chunks[rank].dtype)
            ops += [dist.P2POp(dist.isend, chunks[peer], peer, tag=2),
                    dist.P2POp(dist.irecv, received[peer], peer, tag=2)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return received


# lesson 03 ------------------------------------------------------------------------------------

def shift_as_bytes(tensor):
    """The race fixed, the tensor moved as raw bytes (uint8)."""
    rank, n, nxt, prev = _ring()
    out = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([
        dist.P2POp(dist.isend, tensor.reshape(-1).view(torch.uint8), nxt),
        dist.P2POp(dist.irecv, out.reshape(-1).view(torch.uint8), prev)]))
    return out


# lesson 04 ------------------------------------------------------------------------------------

def batched_receive_waited_only(tensor, peer):
    """Waits for the receive; the send's request is dropped."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    works[1].wait()
    return received


def parity_by_rank_order(tensor, peer):
    """Blocking, ordered by rank < peer instead of by parity."""
    received = torch.empty_like(tensor)
    if dist.get_rank() < peer:
        dist.send(tensor, peer)
        dist.recv(received, peer)
    else:
        dist.recv(received, peer)
        dist.send(tensor, peer)
    return received


def checked_exchange_builtin_meta(tensor, peer):
    """The metadata through an all_gather of every rank's, the data point to point."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    shape, dtype = decode_meta(everyone[peer])
    if shape != tuple(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype} "
                         f"but peer {peer} has {shape} {dtype}")
    return reference_exchange(tensor, peer)


# lesson 05 ------------------------------------------------------------------------------------

def rs_reversed_ring(tensor):
    """Reduce-scatter around the ring the other way: sends to rank - 1."""
    rank, n, _, _ = _ring()
    flat = tensor.view(-1)
    bounds = chunk_bounds(flat.numel(), n)
    chunks = [flat[a:b] for a, b in bounds]
    if n == 1:
        return chunks[0]
    nxt, prev = (rank - 1) % n, (rank + 1) % n         # the mirror image
    for step in range(n - 1):
        outgoing = chunks[(rank + step + 1) % n]
        target = chunks[(rank + step + 2) % n]
        incoming = torch.empty_like(target)
        _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, nxt),
                                      dist.P2POp(dist.irecv, incoming, prev)]))
        target.add_(incoming)
    return chunks[rank]


def ring_doubling_instead(tensor):
    """recursive doubling in place of the ring: whole tensors, other partners."""
    return reference_doubling(tensor)


def ring_blocking_from_5(tensor):
    """The ring up to 4 ranks; from 5 on, blocking sends first everywhere (a deadlock)."""
    rank, n, nxt, prev = _ring()
    if n <= 4:
        return reference_ring(tensor)
    flat = tensor.view(-1)
    incoming = torch.empty_like(flat)
    dist.send(flat, nxt)
    dist.recv(incoming, prev)
    return tensor


# lesson 06 ------------------------------------------------------------------------------------

def a2a_in_float32(model):
    """Every gradient sent as float32: float64 ones lose bits on the way."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = [p for p in model.parameters() if p.grad is not None]
    if n == 1:
        return None
    sent = [p.grad.float().contiguous() for p in params]
    received = [[torch.empty_like(g) for _ in range(n)] for g in sent]
    ops = [op for g, bufs in zip(sent, received) for peer in range(n) if peer != rank
           for op in (dist.P2POp(dist.isend, g, peer), dist.P2POp(dist.irecv, bufs[peer], peer))]
    _wait(dist.batch_isend_irecv(ops))
    for p, g, bufs in zip(params, sent, received):
        bufs[rank] = g
        total = bufs[0].clone()
        for b in bufs[1:]:
            total += b
        p.grad.copy_((total / n).to(p.grad.dtype))
    return None


def ring_avg_by_all_to_all(model):
    """average_gradients_ring's values from the all-to-all averaging."""
    return reference_a2a(model)


def bucketed_by_all_to_all(model, bucket_bytes):
    return reference_a2a(model)


# lesson 07 ------------------------------------------------------------------------------------

def gather_by_object(tensor, dst):
    """p2p_gather through gather_object."""
    out = [None] * dist.get_world_size() if dist.get_rank() == dst else None
    dist.gather_object(tensor, out, dst=dst)
    return None if out is None else [t.clone() for t in out]


def all_gather_reversed_ring(tensor):
    """The ring the other way round: sends to rank - 1, receives from rank + 1."""
    rank, n, nxt, prev = _ring()
    out = [torch.empty_like(tensor) for _ in range(n)]
    out[rank].copy_(tensor)
    for step in range(n - 1):
        _wait(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, out[(rank + step) % n], prev),
            dist.P2POp(dist.irecv, out[(rank + step + 1) % n], nxt)]))
    return out


def all_to_all_per_peer_batches(outputs, inputs):
    """One batch per peer: right values, not ONE batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    for peer in range(n):
        if peer != rank:
            _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, inputs[peer], peer),
                                          dist.P2POp(dist.irecv, outputs[peer], peer)]))
    return outputs


# lesson 09 ------------------------------------------------------------------------------------

def forward_in_float64(output, next_rank):
    """The activation widened to float64 on the wire."""
    if not output.is_floating_point():
        return reference_forward(output, next_rank)
    got = reference_forward(output.double(), next_rank)
    return got.to(output.dtype)


def backward_in_float64(input_grad, prev_rank):
    if not input_grad.is_floating_point():
        return reference_forward(input_grad, prev_rank)
    return reference_forward(input_grad.double(), prev_rank).to(input_grad.dtype)


# lesson 10 ------------------------------------------------------------------------------------

def tree_star(tensor, src):
    """src sends to every rank: a star, p - 1 rounds."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == src:
        ops = [dist.P2POp(dist.isend, tensor, p) for p in range(n) if p != src]
    else:
        ops = [dist.P2POp(dist.irecv, tensor, src)]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    return tensor


def doubling_builtin_at_6(tensor):
    if dist.get_world_size() == 6:
        dist.all_reduce(tensor)
        return tensor
    return reference_doubling(tensor)


def halving_by_doubling(tensor):
    """Whole tensors each step: recursive doubling, not halving."""
    return reference_doubling(tensor)



# the process group's own methods: the lesson's batch never posted --------------------------

def _pg():
    return dist.distributed_c10d._get_default_group()


def broadcast_pg_methods(tensor, src):
    """src sends with the process group's send(), the others receive with its recv()."""
    rank, n = dist.get_rank(), dist.get_world_size()
    if rank == src:
        for work in [_pg().send([tensor], peer, 0) for peer in range(n) if peer != src]:
            work.wait()
    else:
        _pg().recv([tensor], src, 0).wait()
    return tensor


def all_to_all_pg_methods(outputs, inputs):
    """Every pair through the process group's send() and recv(), no batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    outputs[rank].copy_(inputs[rank])
    works = []
    for peer in range(n):
        if peer != rank:
            works += [_pg().send([inputs[peer]], peer, 0), _pg().recv([outputs[peer]], peer, 0)]
    for work in works:
        work.wait()
    return outputs


# the model's parameters are not the exercise's to change ------------------------------------

def a2a_and_sgd_step(model):
    """Averages the gradients, then takes an optimizer step on the parameters."""
    reference_a2a(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-0.1)


def bucketed_and_clip_params(model, bucket_bytes):
    """Averages in DDP's buckets, then clamps the parameters "to be safe"."""
    average_gradients_bucketed = copies.gradients.average_gradients_bucketed
    average_gradients_bucketed(model, bucket_bytes)
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-0.5, 0.5)


def gather_builtin_when_large(tensor, dst):
    """P2P for small tensors, dist.gather from 100000 elements on."""
    p2p_gather = copies.collectives.p2p_gather
    if tensor.numel() < 100_000:
        return p2p_gather(tensor, dst)
    rank, n = dist.get_rank(), dist.get_world_size()
    out = [torch.empty_like(tensor) for _ in range(n)] if rank == dst else None
    dist.gather(tensor, out, dst=dst)
    return out


def batched_polls_is_completed(tensor, peer):
    """Polls the requests instead of waiting for them."""
    received = torch.empty_like(tensor)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                    dist.P2POp(dist.irecv, received, peer)])
    while not all(work.is_completed() for work in works):
        pass
    return received


def fixed_average_in_float32(model):
    """Snippet 3 fixed, but every gradient travels as float32."""
    rank, n = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    wire = [g.float() for g in grads]
    peers = [p for p in range(n) if p != rank]
    inbox = {peer: [torch.empty_like(w) for w in wire] for peer in peers}
    ops = [op for peer in peers for w, b in zip(wire, inbox[peer])
           for op in (dist.P2POp(dist.isend, w, peer), dist.P2POp(dist.irecv, b, peer))]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    for k, p in enumerate(model.parameters()):
        total = grads[k].clone()
        for peer in peers:
            total += inbox[peer][k].to(total.dtype)
        p.grad = total / n
