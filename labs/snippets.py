"""Lesson 08: three widely copied batch_isend_irecv snippets, run as they really are,
every bug shown, then fixed step by step.

    snippet 1  "isend tensor1 to 1, irecv from 0"   constant peers (self-send), a receive
                                                     buffer of the wrong size that nothing
                                                     keeps, one request waited, by index
    snippet 2  "ring all-reduce"                     one shift in and out of the same tensor,
                                                     a barrier instead of wait()
    snippet 3  "all-to-all gradient averaging"       a parameter index used as a rank, more
                                                     receives than sends, a barrier instead
                                                     of wait(), a wrong average of buffers
                                                     that may never have been written

Each snippet is written the way it circulates (`*_as_written`: read them, do not copy
them); the `*_with_fixes` versions apply the notebook's fixes one step at a time. The
last fixes come from earlier lessons' exercises (04's exchange_batched, 03's
safe_ring_shift) and from this lesson's exercise, `fixed_average_gradients(model)`.
The section on claims met online runs labs/claims/online.py.
"""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from labs.deadlocks import exchange_batched
from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.grading import recording
from labs.ring import pass_along_all_reduce
from labs.waiting import safe_ring_shift


def store_barrier(name):
    """Wait until every rank got here, through the rendezvous store, not through gloo:
    it orders two ranks' steps without any point-to-point op of its own."""
    store = dist.distributed_c10d._get_default_store()
    store.set(f"{name}/{dist.get_rank()}", "1")
    store.wait([f"{name}/{r}" for r in range(dist.get_world_size())])


# ----------------------------------------------------------------------------------------
# Snippet 1: "isend tensor1 to 1, irecv from 0"
# ----------------------------------------------------------------------------------------

def snippet1_as_written(rank, world_size):
    """Snippet 1 as it circulates. Every rank runs these same lines."""
    tensor1 = torch.randn(5)            # the data to send
    tensor2 = torch.randn(3)            # the data to receive, says the text
    ops = [dist.P2POp(dist.isend, tensor1, 1),
           dist.P2POp(dist.irecv, torch.empty_like(tensor2), 0)]
    reqs = dist.batch_isend_irecv(ops)
    reqs[1].wait()
    # ... "now process tensor2"
    return tensor2


def snippet1_with_fixes(rank, world_size, fixes=()):
    """Snippet 1 with some of its fixes (two ranks):
        "peers": send to and receive from the other rank, not the constants 1 and 0;
        "size":  receive into a buffer of the size the peer sends (5), not tensor2's (3).
    Returns what the notebook checks: what was sent, whether tensor2 changed, what landed
    in the receive buffer, and which requests the snippet's lines waited for."""
    peer_to, peer_from = (1 - rank, 1 - rank) if "peers" in fixes else (1, 0)
    tensor1 = torch.randn(5)
    tensor2 = torch.randn(3)
    before = tensor2.clone()
    with recording() as events:                 # the snippet's own lines
        ops = [dist.P2POp(dist.isend, tensor1, peer_to),
               dist.P2POp(dist.irecv, torch.empty_like(tensor1 if "size" in fixes else tensor2),
                          peer_from)]
        reqs = dist.batch_isend_irecv(ops)
        reqs[1].wait()
    report = {"sent": tensor1, "tensor2_unchanged": torch.equal(tensor2, before),
              "received": ops[1].tensor.clone(), "works": len(reqs),
              "waited_for": [e.label for e in events if e.op == "wait"]}
    reqs[0].wait()      # not in the snippet: a send nobody waits for can be lost (notebook)
    return report


def dropped_send(rank, world_size):
    """What becomes of a send nobody waits for. Rank 0 posts an isend to rank 1 and drops
    the request (as a function that returns without waiting does); only then (the store
    orders it, not luck) does rank 1 post its receive and wait for it."""
    if rank == 0:
        req = dist.isend(torch.ones(3), dst=1)
        del req
        store_barrier("dropped")
        return "rank 0 dropped its send request"
    store_barrier("dropped")
    got = torch.zeros(3)
    dist.irecv(got, src=0).wait()
    return got.tolist()


def snippet1_fixed(rank, world_size):
    """All fixes: lesson 04's exchange_batched (the peer from the rank, a buffer of the
    message's size that the caller gets back, every request waited). Two ranks."""
    tensor1 = torch.randn(5)
    return tensor1, exchange_batched(tensor1, 1 - rank)


# ----------------------------------------------------------------------------------------
# Snippet 2: the "ring all-reduce"
# ----------------------------------------------------------------------------------------

def ring_all_reduce_as_written(tensor):
    """Snippet 2 as it circulates: one shift around the ring, in and out of the same
    tensor, then a barrier."""
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    send_op = dist.P2POp(dist.isend, tensor, (rank + 1) % world_size)
    recv_op = dist.P2POp(dist.irecv, tensor, (rank - 1 + world_size) % world_size)
    reqs = dist.batch_isend_irecv([send_op, recv_op])
    dist.barrier()
    return tensor


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


def snippet2_fixed_shift(rank, world_size):
    """Fix 1: a separate receive buffer and wait() (lesson 03's safe_ring_shift)."""
    return safe_ring_shift(torch.tensor([rank + 1.0])).item()


def snippet2_fixed_sum(rank, world_size):
    """Fix 2: p - 1 shifts that add what arrives (lesson 05's pass-along ring)."""
    return pass_along_all_reduce(torch.tensor([rank + 1.0])).item()


def dropped_request(rank, world_size, keep=False, then_barrier=True):
    """What becomes of a receive nobody keeps (snippets 2 and 3 drop their requests).

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


# ----------------------------------------------------------------------------------------
# Snippet 3: "all-to-all gradient averaging"
# ----------------------------------------------------------------------------------------

def average_gradients_as_written(model):
    """Snippet 3 as it circulates: one op list for the whole model."""
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    recv_grads = [torch.empty_like(g) for g in grads]
    ops = []
    for i in range(world_size):
        for j in range(world_size):
            if i != j:
                if rank == i:
                    ops.append(dist.P2POp(dist.isend, grads[j], j))
                else:
                    ops.append(dist.P2POp(dist.irecv, recv_grads[j], i))
    reqs = dist.batch_isend_irecv(ops)
    dist.barrier()                      # synchronise before averaging
    for k in range(len(grads)):
        grads[k] /= world_size
        grads[k].add_(recv_grads[k])
    for param, grad in zip(params, grads):
        param.grad = grad


def average_gradients_with_fixes(model, fixes=()):
    """Snippet 3 with some of its fixes:
        "index": for every pair, every parameter's gradient (grads[k] for each k), never
                 grads[j] with j a rank;
        "wait":  wait() for every request instead of the barrier."""
    world_size = dist.get_world_size()
    rank = dist.get_rank()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    recv_grads = [torch.empty_like(g) for g in grads]
    ops = []
    for i in range(world_size):
        for j in range(world_size):
            if i != j:
                for k in (range(len(grads)) if "index" in fixes else [j]):
                    if rank == i:
                        ops.append(dist.P2POp(dist.isend, grads[k], j))
                    else:
                        ops.append(dist.P2POp(dist.irecv, recv_grads[k], i))
    reqs = dist.batch_isend_irecv(ops)
    if "wait" in fixes:
        for req in reqs:
            req.wait()
    else:
        dist.barrier()
    for k in range(len(grads)):
        grads[k] /= world_size
        grads[k].add_(recv_grads[k])
    for param, grad in zip(params, grads):
        param.grad = grad


# The same model on every rank: "linear" has 2 parameters, "mlp" 4 of different shapes.
MODELS = {"linear": lambda: nn.Linear(4, 3),
          "mlp": lambda: nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))}


def make_model_and_grads(rank, name="mlp"):
    """Model `name` (seed 0: the same weights on every rank), gradients from this rank's
    own batch. Returns (model, x, y)."""
    torch.manual_seed(0)
    model = MODELS[name]()
    g = torch.Generator().manual_seed(1000 + rank)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)
    nn.functional.mse_loss(model(x), y).backward()
    return model, x, y


def made_of(new, own, everyone, world_size):
    """What an "averaged" gradient is made of, in words the notebook prints."""
    if torch.allclose(new, torch.stack(everyone).mean(0)):
        return "the mean"
    rest = new - own / world_size
    if any(torch.allclose(rest, g) for g in everyone if not torch.equal(g, own)):
        return "own/p + one other rank's gradient, unscaled"
    return "own/p + memory nobody wrote"


def snippet3_run(rank, world_size, name, fixes=None):
    """Run snippet 3 (as written, or `average_gradients_with_fixes(model, fixes)`) on
    model `name`. Returns, per parameter, what its new gradient is made of; whether the
    tensors it sent were changed in place; and the calls the snippet made."""
    model, _, _ = make_model_and_grads(rank, name)
    own = [p.grad.clone() for p in model.parameters()]
    everyone = []
    for g in own:                       # every rank's gradients, to name what comes out
        everyone.append([torch.empty_like(g) for _ in range(world_size)])
        dist.all_gather(everyone[-1], g)
    sent = [p.grad for p in model.parameters()]
    with recording() as events:
        if fixes is None:
            average_gradients_as_written(model)
        else:
            average_gradients_with_fixes(model, fixes)
    return {"made_of": [made_of(p.grad, o, e, world_size)
                        for p, o, e in zip(model.parameters(), own, everyone)],
            "sent_changed_in_place": all(p.grad is s and not torch.equal(s, o)
                                         for p, s, o in zip(model.parameters(), sent, own)),
            "calls": [e.op for e in events]}


@exercise
def fixed_average_gradients(model):
    """Snippet 3, fixed: replace every `param.grad` of `model` with its mean over all ranks
    (what DDP computes), with point-to-point ops only.

    Contract:
      * ONE dist.batch_isend_irecv for the whole model: every rank sends each of its
        gradients to every other rank, and receives each other rank's gradients into
        fresh buffers (one per peer and parameter);
      * wait() for every request the batch returns (no barrier) before reading a receive
        buffer or changing a gradient that is being sent;
      * then average: (your gradient + the W - 1 you received) / W, per parameter;
      * the parameters themselves are not touched, only their .grad. Every parameter has a
        gradient, of the same shape on every rank. Any world size >= 1 (with one rank
        there is nothing to send, and batch_isend_irecv([]) raises IndexError);
      * returns None.

    Hint: loop over the other ranks, and inside over the gradients: an isend of the
    gradient and an irecv into torch.empty_like(gradient). Two ranks' messages match in
    the order they were posted (FIFO), so post them in the same parameter order on every
    rank.
    """
    raise todo("notebook 08, 'Exercise: fix snippet 3'")


def fixed_vs_ddp(rank, world_size, name="mlp"):
    """fixed_average_gradients vs DDP on the same model and data: allclose per parameter."""
    model, x, y = make_model_and_grads(rank, name)
    fixed_average_gradients(model)
    torch.manual_seed(0)
    ddp = DDP(MODELS[name]())
    nn.functional.mse_loss(ddp(x), y).backward()
    return all(torch.allclose(p.grad, q.grad, atol=1e-6)
               for p, q in zip(model.parameters(), ddp.parameters()))


# ----------------------------------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 08 demo: snippet 3, fixed, against DDP."""
    try:
        return f"fixed snippet 3 equals DDP's gradients: {fixed_vs_ddp(rank, world_size)}"
    except NotImplementedError:
        # Every rank raises before any communication, so all fall back together.
        return ("fixed_average_gradients is not written yet (the exercise); the pass-along "
                f"ring summed ranks 1..{world_size}: {snippet2_fixed_sum(rank, world_size):g}")


if __name__ == "__main__":
    cli.main(demo)
