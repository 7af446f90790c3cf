"""Lesson 08: three widely copied batch_isend_irecv snippets, run as written, then fixed.

Each snippet appears here as close to the way it circulates as a worker function allows
(the `*_as_written` functions: read them, do not copy them). Next to each one:
  * a worker the notebook launches to show, with stable facts, what it really does;
  * the fixed version, and a worker that proves it against `dist.all_reduce` or DDP.

    snippet 1  "isend tensor1 to 1, irecv from 0"   self-send: "Pair is not connected"
    snippet 2  "ring all-reduce" (one shift)         same buffer both ways, barrier not wait,
                                                     one shift is not a reduction
    snippet 3  "all-to-all gradient averaging"       mismatched pairs, never waits, averages
                                                     buffers nobody wrote

The exercise is `fixed_ring_all_reduce(tensor)` (notebook 08, "Exercise").
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from labs.harness import cli
from labs.harness.exercises import exercise, todo


# ----------------------------------------------------------------------------------------
# Snippet 1: the two-rank example
# ----------------------------------------------------------------------------------------

def example1_as_written(rank, world_size):
    """Snippet 1 as written. Every rank runs the same lines, with the same peers."""
    tensor1 = torch.arange(4.0) + 10 * rank    # what this rank wants to send
    tensor2 = torch.zeros(4)                    # where it wants the other rank's data
    ops = [
        dist.P2POp(dist.isend, tensor1, 1),     # rank 1 sends to ITSELF
        dist.P2POp(dist.irecv, tensor2, 0),     # rank 0 receives from ITSELF
    ]
    reqs = dist.batch_isend_irecv(ops)
    for req in reqs:
        req.wait()
    return tensor2


def example1_fixed(rank, world_size):
    """The fix: peers depend on the rank. Send to the next rank, receive from the previous
    one (for 2 ranks both are "the other rank"); then wait for every request."""
    tensor1 = torch.arange(4.0) + 10 * rank
    tensor2 = torch.zeros(4)
    ops = [
        dist.P2POp(dist.isend, tensor1, (rank + 1) % world_size),
        dist.P2POp(dist.irecv, tensor2, (rank - 1) % world_size),
    ]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return tensor2


# ----------------------------------------------------------------------------------------
# Snippet 2: the "ring all-reduce"
# ----------------------------------------------------------------------------------------

def ring_all_reduce_as_written(tensor):
    """Snippet 2 as written: one shift around the ring, in and out of the same tensor,
    then a barrier. (It is not an all-reduce; see the notebook.)"""
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    send_op = dist.P2POp(dist.isend, tensor, (rank + 1) % world_size)
    recv_op = dist.P2POp(dist.irecv, tensor, (rank - 1 + world_size) % world_size)
    reqs = dist.batch_isend_irecv([send_op, recv_op])
    dist.barrier()
    return tensor


def ring_as_written_worker(rank, world_size):
    """Rank r holds r + 1 and runs snippet 2's lines, plus one probe. Returns (value,
    expected sum, whether the requests reported completion right after the barrier)."""
    tensor = torch.tensor([rank + 1.0])
    expected = torch.tensor([rank + 1.0])
    dist.all_reduce(expected)                   # the right answer, for comparison
    # The snippet's lines; the snippet drops its requests, so to look at them we keep
    # them and add one probe: is_completed() right after the barrier.
    send_op = dist.P2POp(dist.isend, tensor, (rank + 1) % world_size)
    recv_op = dist.P2POp(dist.irecv, tensor, (rank - 1 + world_size) % world_size)
    reqs = dist.batch_isend_irecv([send_op, recv_op])
    dist.barrier()
    completed = [req.is_completed() for req in reqs]
    value = tensor.item()
    for req in reqs:        # tidy up before the group is destroyed (not in the snippet)
        req.wait()
    return value, expected.item(), completed


def ring_snippet_outcome(rank, world_size):
    """Rank r holds r + 1, calls `ring_all_reduce_as_written` unchanged, returns the value."""
    return ring_all_reduce_as_written(torch.tensor([rank + 1.0])).item()


def same_buffer_slow_motion(rank, world_size):
    """The race inside snippet 2, with its order forced (3 ranks, no luck involved).

    Rank 1 does what every rank of snippet 2 does: one batch that sends `t` to rank 2 and
    receives into the same `t` from rank 0. Here rank 1's receive is known to have landed
    before rank 2 posts its receive (a barrier orders them). gloo reads a send buffer when
    the receiver is ready, not when isend is called, so rank 2 gets rank 0's value.
    """
    if rank == 0:
        dist.send(torch.tensor([1.0]), dst=1)
        dist.barrier()
        return None
    if rank == 1:
        t = torch.tensor([2.0])
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 2),
                                       dist.P2POp(dist.irecv, t, 0)])
        reqs[1].wait()          # our receive has overwritten t ...
        dist.barrier()          # ... before rank 2 even asks for our send
        reqs[0].wait()
        return t.item()
    if rank == 2:
        dist.barrier()
        got = torch.zeros(1)
        dist.recv(got, src=1)
        return got.item()
    dist.barrier()
    return None


def barrier_is_not_wait(rank, world_size):
    """Rank 0 isends to rank 1; rank 1 receives it with a blocking recv (so the data has
    certainly arrived); both call barrier. Rank 0 returns is_completed() of its request
    before and after wait()."""
    if rank == 0:
        req = dist.isend(torch.arange(3.0), dst=1)
        dist.barrier()
        before = req.is_completed()
        req.wait()
        return before, req.is_completed()
    got = torch.zeros(3)
    dist.recv(got, src=0)
    dist.barrier()
    return got.tolist()


@exercise
def fixed_ring_all_reduce(tensor):
    """Sum `tensor` over all ranks of the default group, in place, and return it: the
    result `dist.all_reduce(tensor)` would give (exactly for integer dtypes, to rounding
    for floating point). Any shape, any dtype, any world size >= 1. Only point-to-point
    ops (`P2POp`/`batch_isend_irecv`, `isend`/`irecv`): no collectives.

    Fix snippet 2's three defects:
      * receive into a separate buffer, never the tensor being sent;
      * `wait()` on every request before reading or reusing a buffer (no barrier);
      * one shift moves data, it does not add: do world_size - 1 shifts, passing on what
        you received and adding it to an accumulator.

    Hint: keep `acc = tensor.clone()` and `outgoing = tensor.clone()`; in each step send
    `outgoing` to rank + 1 and receive `incoming = torch.empty_like(tensor)` from rank - 1
    in one batch, wait, `acc += incoming`, `outgoing = incoming`. Finally `tensor.copy_(acc)`.
    """
    raise todo("notebook 08, 'Exercise: fix the ring'")


def ring_fixed_worker(rank, world_size, numel=6, dtype="float32"):
    """Rank r holds a seeded tensor; returns (fixed_ring_all_reduce result, all_reduce result)."""
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(100 + rank)
    data = torch.randint(-50, 50, (numel,), generator=g).to(dt)
    if dt.is_floating_point:
        data = data / 8
    expected = data.clone()
    dist.all_reduce(expected)
    got = fixed_ring_all_reduce(data)
    return got, expected


def fixed_ring_integers(rank, world_size):
    """Rank r holds r + 1 (as in snippet 2); the fixed ring returns the sum on every rank."""
    return fixed_ring_all_reduce(torch.tensor([rank + 1])).item()


# ----------------------------------------------------------------------------------------
# Snippet 3: "all-to-all gradient averaging"
# ----------------------------------------------------------------------------------------

def average_gradients_as_written(model):
    """Snippet 3 as written: every rank loops over every ordered pair (i, j) of ranks."""
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    for param in model.parameters():
        grads = [torch.empty_like(param.grad) for _ in range(world_size)]
        grads[rank] = param.grad
        ops = []
        for i in range(world_size):
            for j in range(world_size):
                if i == j:
                    continue
                if i == rank:
                    ops.append(dist.P2POp(dist.isend, grads[rank], j))
                else:
                    ops.append(dist.P2POp(dist.irecv, grads[i], i))
        dist.batch_isend_irecv(ops)
        param.grad = sum(grads) / world_size


def make_model_and_grads(rank, in_features=4, out_features=3, batch=8):
    """The same model on every rank (seed 0), gradients from this rank's own data."""
    torch.manual_seed(0)
    model = nn.Linear(in_features, out_features)
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(batch, in_features, generator=g)
    y = torch.randn(batch, out_features, generator=g)
    nn.functional.mse_loss(model(x), y).backward()
    return model, x, y


def true_mean_gradients(model, world_size):
    """The right answer, with the built-in collective: all_reduce(SUM) then / world_size."""
    means = []
    for p in model.parameters():
        t = p.grad.detach().clone()
        dist.all_reduce(t)
        means.append(t / world_size)
    return means


def store_barrier(name):
    """Wait until every rank got here, through the rendezvous store, not through gloo.

    After snippet 3 a gloo barrier would hang (see the notebook); the store still works.
    """
    store = dist.distributed_c10d._get_default_store()
    store.set(f"{name}/{dist.get_rank()}", "1")
    store.wait([f"{name}/{r}" for r in range(dist.get_world_size())])


def all_to_all_as_written_worker(rank, world_size):
    """Run snippet 3 unchanged; report per parameter whether the result is the true mean."""
    model, _, _ = make_model_and_grads(rank)
    expected = true_mean_gradients(model, world_size)
    average_gradients_as_written(model)
    got = [p.grad.clone() for p in model.parameters()]
    # (The launcher keeps a rank that returned alive until every rank has returned, so a
    # fast rank cannot close its connections while a peer is still posting its ops.)
    return {
        "equals_true_mean": [bool(torch.allclose(g, e)) for g, e in zip(got, expected)],
        "max_abs": max(g.abs().max().item() for g in got),
    }


def all_to_all_then_barrier(rank, world_size):
    """Snippet 3, then the next thing a training step does: any collective (here barrier)."""
    model, _, _ = make_model_and_grads(rank)
    average_gradients_as_written(model)
    dist.barrier()
    return "barrier passed"


def average_gradients_as_written_but_waiting(model):
    """Snippet 3 with one change: it keeps its requests and waits for them."""
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    for param in model.parameters():
        grads = [torch.empty_like(param.grad) for _ in range(world_size)]
        grads[rank] = param.grad
        ops = []
        for i in range(world_size):
            for j in range(world_size):
                if i == j:
                    continue
                if i == rank:
                    ops.append(dist.P2POp(dist.isend, grads[rank], j))
                else:
                    ops.append(dist.P2POp(dist.irecv, grads[i], i))
        for req in dist.batch_isend_irecv(ops):       # the only change
            req.wait()
        param.grad = sum(grads) / world_size


def all_to_all_waiting_worker(rank, world_size):
    model, _, _ = make_model_and_grads(rank)
    average_gradients_as_written_but_waiting(model)
    return "done"


def dropped_request(rank, world_size, keep=False, then_barrier=True):
    """What happens to a request nobody keeps (snippet 3 drops all of its requests).

    Rank 0 posts `irecv` from rank 1 and, with keep=False, drops the request at once.
    Only then (the rendezvous store orders it, not luck) rank 1 sends and waits for its
    send. Rank 0 then looks at its buffer, and (then_barrier) both ranks call a barrier.
    """
    received = torch.zeros(3)
    if rank == 0:
        req = dist.irecv(received, src=1)
        if not keep:
            del req                      # what `dist.batch_isend_irecv(ops)` alone does
        store_barrier("posted")
        store_barrier("sent")
        if keep:
            req.wait()
        print(f"rank 0's buffer after rank 1's send completed: {received.tolist()}")
    else:
        store_barrier("posted")
        dist.isend(torch.ones(3), dst=0).wait()
        print("rank 1's send completed")
        store_barrier("sent")
    if then_barrier:
        dist.barrier()
    return received.tolist() if rank == 0 else None


def average_gradients_fixed(model):
    """Snippet 3 fixed: every param.grad becomes the mean over ranks, as DDP computes it.

    Per parameter, one batch in which this rank sends its gradient to every other rank
    and receives every other rank's gradient into a buffer of its own; waits for all of
    them; then adds the W gradients in rank order (so every rank adds in the same order
    and gets bitwise the same mean).
    """
    world_size, rank = dist.get_world_size(), dist.get_rank()
    for param in model.parameters():
        if param.grad is None:      # frozen or unused: skipped (the same on every rank)
            continue
        grad = param.grad.contiguous()
        received = [grad if peer == rank else torch.empty_like(grad)
                    for peer in range(world_size)]
        ops = []
        for peer in range(world_size):
            if peer != rank:
                ops.append(dist.P2POp(dist.isend, grad, peer))
                ops.append(dist.P2POp(dist.irecv, received[peer], peer))
        for req in dist.batch_isend_irecv(ops) if ops else []:
            req.wait()
        total = received[0].clone()
        for buf in received[1:]:
            total += buf
        param.grad = total / world_size


def all_to_all_fixed_vs_ddp(rank, world_size):
    """Fixed snippet 3 vs DDP on the same model and data: (max |difference|, allclose)."""
    model, x, y = make_model_and_grads(rank)
    average_gradients_fixed(model)
    ours = [p.grad.clone() for p in model.parameters()]

    torch.manual_seed(0)
    ddp = DDP(nn.Linear(x.shape[1], y.shape[1]))
    nn.functional.mse_loss(ddp(x), y).backward()
    theirs = [p.grad.clone() for p in ddp.parameters()]
    diff = max((a - b).abs().max().item() for a, b in zip(ours, theirs))
    return diff, all(bool(torch.allclose(a, b, atol=1e-6)) for a, b in zip(ours, theirs))


# ----------------------------------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 08 demo: rank r holds r + 1; the fixed ring (W - 1 shifts) returns the sum."""
    try:
        return fixed_ring_integers(rank, world_size)
    except NotImplementedError:
        # Every rank raises before any communication, so all fall back together.
        got = example1_fixed(rank, world_size)
        return ("fixed_ring_all_reduce is not written yet (the exercise); fixed snippet 1 "
                f"received {got.tolist()}")


if __name__ == "__main__":
    cli.main(demo)
