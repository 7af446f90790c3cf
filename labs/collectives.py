"""Lesson 07: collectives built from point-to-point, measured against the built-ins.

Four exercises, each one `batch_isend_irecv` pattern with the contract of the
`torch.distributed` collective of the same name:

    p2p_broadcast(tensor, src)       src sends to every other rank        (one batch)
    p2p_gather(tensor, dst)          every rank sends to dst              (one batch)
    p2p_all_gather(tensor)           a ring: W-1 steps, each a batch of one send + one recv
    p2p_all_to_all(outputs, inputs)  every pair exchanges its own slice   (one batch)

The worker functions below run them next to the built-ins on real gloo workers: do the
results match (`check_against_builtins`), how long does each take (`time_collectives`),
and the other rows of the "which approach when" table, measured on this machine
(`approaches`). Tables and plots of the results: labs.views.collectives.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.gradients import average_gradients_all_reduce, plan_buckets
from labs.harness.ranks.measure import time_on_ranks

OPS = ("broadcast", "gather", "all_gather", "all_to_all")


# ---------------------------------------------------------------------------------------
# Exercises
# ---------------------------------------------------------------------------------------

@exercise
def p2p_broadcast(tensor, src):
    """Copy `tensor` of rank `src` into `tensor` on every rank, like `dist.broadcast`.

    Contract: in place on every rank (also on `src`, where it is left unchanged); returns
    `tensor`. Every rank passes a contiguous tensor of the same shape and dtype (any
    dtype). Works for any world size, including 1. Uses P2POp + batch_isend_irecv only, ONE
    batch per rank (src posts all its sends at once, then waits: sends waited one by one
    would each wait for their receiver in turn). The method is the star: `src` sends the
    whole tensor once to every other rank, and each of them receives it once, from `src`
    (no relay, no tree: those are lesson 10's).

    Hint: `src` posts one isend per other rank, every other rank posts one irecv from
    `src`; wait on every request before returning. With one rank there is nothing to
    send, and `batch_isend_irecv([])` raises IndexError.
    """
    raise todo("notebook 07, 'Exercise 1: broadcast'")


@exercise
def p2p_gather(tensor, dst):
    """Collect every rank's `tensor` on rank `dst`, like `dist.gather`.

    Contract: every rank passes a contiguous tensor of the same shape and dtype (any
    dtype). On `dst`, returns a list of `world_size` new tensors, element r a copy of rank
    r's `tensor` (element dst too: a copy, never `tensor` itself); on the other ranks,
    returns None. `tensor` itself is not modified. Works for any world size, including 1.
    Uses P2POp + batch_isend_irecv only, ONE batch per rank (`dst` posts all its receives
    at once, then waits). The method is the star: every other rank sends its
    tensor once, straight to `dst`, and `dst` receives once from each (no relay, no tree).

    Hint: `dst` allocates the list and posts one irecv per other rank into its slot; the
    others post one isend. Its own slot is a local copy: gloo cannot send to itself.
    """
    raise todo("notebook 07, 'Exercise 2: gather'")


@exercise
def p2p_all_gather(tensor):
    """Every rank gets every rank's `tensor`, like `dist.all_gather`, by a ring.

    Contract: every rank passes a contiguous tensor of the same shape and dtype (any
    dtype). Returns a list of `world_size` new tensors in rank order (element r = rank r's
    `tensor`, your own a copy) on every rank; `tensor` is not modified. Any world size,
    including 1. Uses P2POp + batch_isend_irecv only, and only with ranks +-1.
    The ring: W-1 steps; in each step a rank sends one slot to rank+1 and receives one
    slot from rank-1, in ONE batch_isend_irecv, and waits for both before the next step.

    Hint: in step s, send slot (rank - s) % W and receive into slot (rank - s - 1) % W.
    Receive into the output slot, never into the buffer you are sending.
    """
    raise todo("notebook 07, 'Exercise 3: all_gather by a ring'")


@exercise
def p2p_all_to_all(outputs, inputs):
    """Rank i sends `inputs[j]` to rank j, which receives it into its `outputs[i]`,
    like `dist.all_to_all(outputs, inputs)`.

    Contract: `inputs` and `outputs` are lists of `world_size` contiguous tensors; the
    sizes may differ per peer, but `outputs[j]` on rank i must have the size and dtype of
    `inputs[i]` on rank j (as with the built-in; gloo does not check, see lesson 04).
    Fills the caller's tensors in `outputs` in place (never puts other tensors in the
    list: the caller holds those tensors) and returns `outputs`; `inputs` is not
    modified. ONE batch_isend_irecv for the whole exchange. Any world size, including 1.

    Hint: the rank's own slot is a local copy; for every other rank post an isend of
    `inputs[peer]` and an irecv into `outputs[peer]`.
    """
    raise todo("notebook 07, 'Exercise 4: all_to_all'")


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------

def sample(rank, shape, dtype, salt=0):
    """A tensor that differs per rank, reproducible: rank r's data is the same every run."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def split_rows(tensor, ws):
    """all_to_all's inputs: slot j (for rank j) = the j-th of `ws` blocks of rows, as
    `tensor.tensor_split(ws)` cuts them (sizes may differ by one, or be empty)."""
    return [b.contiguous() for b in tensor.tensor_split(ws)]


def run_p2p(op, tensor, root=0):
    """Run our P2P version of `op` on `tensor`; return the result as one tensor."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if op == "broadcast":
        return p2p_broadcast(tensor.clone(), root)
    if op == "gather":
        got = p2p_gather(tensor, root)
        return torch.stack(got) if rank == root else None
    if op == "all_gather":
        return torch.stack(p2p_all_gather(tensor))
    if op == "all_to_all":
        inputs = split_rows(tensor, ws)
        outputs = [torch.empty_like(inputs[rank]) for _ in range(ws)]  # same split everywhere
        return torch.cat(p2p_all_to_all(outputs, inputs))
    raise ValueError(f"unknown op {op!r}; one of {OPS}")


def run_builtin(op, tensor, root=0):
    """The same job done by the torch.distributed collective of the same name."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    if op == "broadcast":
        out = tensor.clone()
        dist.broadcast(out, root)
        return out
    if op == "gather":
        got = [torch.empty_like(tensor) for _ in range(ws)] if rank == root else None
        dist.gather(tensor, got, dst=root)
        return torch.stack(got) if rank == root else None
    if op == "all_gather":
        got = [torch.empty_like(tensor) for _ in range(ws)]
        dist.all_gather(got, tensor)
        return torch.stack(got)
    if op == "all_to_all":
        inputs = split_rows(tensor, ws)
        outputs = [torch.empty_like(inputs[rank]) for _ in range(ws)]
        if len({t.shape for t in inputs}) == 1:
            dist.all_to_all(outputs, inputs)
        else:   # gloo's list all_to_all wants equal sizes; the "single" form takes splits
            out = torch.cat(outputs)
            dist.all_to_all_single(out, tensor, [len(outputs[0])] * ws,
                                   [len(t) for t in inputs])
            return out
        return torch.cat(outputs)
    raise ValueError(f"unknown op {op!r}; one of {OPS}")


# ---------------------------------------------------------------------------------------
# Worker functions the notebook launches
# ---------------------------------------------------------------------------------------

def show(rank, world_size, op, numel=2):
    """Run one P2P op on tiny integer data and print what this rank holds afterwards."""
    t = torch.arange(numel) + 10 * rank          # rank r holds [10r, 10r+1, ...]
    if op != "all_to_all":
        print(f"before: {t.tolist()}")
    if op == "broadcast":
        out = p2p_broadcast(t, src=0).tolist()
    elif op == "gather":
        got = p2p_gather(t, dst=0)
        out = None if got is None else [g.tolist() for g in got]
    elif op == "all_gather":
        out = [g.tolist() for g in p2p_all_gather(t)]
    elif op == "all_to_all":
        inputs = [torch.tensor([100 * rank + j]) for j in range(world_size)]  # for rank j
        print(f"inputs (slot j goes to rank j): {[x.item() for x in inputs]}")
        outputs = p2p_all_to_all([torch.empty(1, dtype=torch.int64)
                                  for _ in range(world_size)], inputs)
        out = [x.item() for x in outputs]
    else:
        raise ValueError(f"unknown op {op!r}; one of {OPS}")
    print(f"after:  {out}")
    return out


def check_against_builtins(rank, world_size, cases):
    """For each (op, shape, dtype name, root): does our P2P op equal the built-in, bitwise?

    Returns {case: True/False/None} (None: this rank receives nothing, e.g. gather's
    non-root ranks).
    """
    verdict = {}
    for op, shape, dtype_name, root in cases:
        x = sample(rank, shape, getattr(torch, dtype_name), salt=len(verdict))
        mine, theirs = run_p2p(op, x, root), run_builtin(op, x, root)
        verdict[(op, shape, dtype_name, root)] = (None if mine is None else
                                                  bool(torch.equal(mine, theirs)))
    return verdict


def time_collectives(rank, world_size, numel, reps=5):
    """Seconds of one call of each P2P op and of its built-in, on float32 tensors of
    `numel`: {op: {"p2p": [seconds], "builtin": [seconds]}}, `reps` interleaved
    repetitions after a warm-up, the slowest rank's time (labs.harness.ranks.measure.time_on_ranks)."""
    x = sample(rank, (numel,), torch.float32)
    calls = {}
    for op in OPS:
        calls[(op, "p2p")] = lambda op=op: run_p2p(op, x)
        calls[(op, "builtin")] = lambda op=op: run_builtin(op, x)
    seconds = time_on_ranks(calls, reps)
    return {op: {kind: seconds[(op, kind)] for kind in ("p2p", "builtin")} for op in OPS}


def ring_shift(tensor):
    """One step of a ring: send `tensor` to rank+1, receive rank-1's into a new tensor."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    got = torch.empty_like(tensor)
    ops = [dist.P2POp(dist.isend, tensor, (rank + 1) % ws),
           dist.P2POp(dist.irecv, got, (rank - 1) % ws)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return got


def shift_by_all_gather(tensor):
    """The same ring shift without P2P: all_gather everything, keep rank-1's slot."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    got = [torch.empty_like(tensor) for _ in range(ws)]
    dist.all_gather(got, tensor)
    return got[(rank - 1) % ws]


def uneven_all_to_all(rank, world_size):
    """Rank r sends slices of unequal size (5 elements cut into blocks of 2, 2, 1).

    Returns (what gloo's list `dist.all_to_all` said, what `p2p_all_to_all` received).
    """
    inputs = split_rows(torch.arange(5.0) + 10 * rank, world_size)
    outputs = [torch.empty_like(inputs[rank]) for _ in range(world_size)]
    try:
        dist.all_to_all(outputs, inputs)
        builtin = "ok"
    except RuntimeError as exc:
        builtin = str(exc).splitlines()[0]
    outputs = [torch.empty_like(inputs[rank]) for _ in range(world_size)]
    return builtin, torch.cat(p2p_all_to_all(outputs, inputs)).tolist()


def empty_batch(rank, world_size):
    """What `batch_isend_irecv([])` does (what a 1-rank "exchange" would post)."""
    try:
        dist.batch_isend_irecv([])
        return "no error"
    except Exception as exc:  # noqa: BLE001 - show whatever it is
        return f"{type(exc).__name__}: {exc}"


def traced_all_gather(rank, world_size, numel=4096):
    """p2p_all_gather once, for the timeline (the launcher records every op)."""
    p2p_all_gather(sample(rank, (numel,), torch.float32))


# ---------------------------------------------------------------------------------------
# "Which approach when", measured
# ---------------------------------------------------------------------------------------

TABLE_KEYS = ("compute only, no sync", "DDP", "DDP, small buckets", "all_reduce per grad",
              "ring shift, batch_isend_irecv", "ring shift by all_gather")


def make_mlp(width, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width))


def _training_step(net, sync, batch, width, rank):
    """One training step (forward, backward, `sync(model)`, SGD step) as a function."""
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(batch, width, generator=g), torch.randn(batch, width, generator=g)

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        sync(net)
        opt.step()
    return step


def approaches(rank, world_size, width=256, batch=32, reps=5):
    """Measure the rows of the "which approach when" table that lesson 07's section 3 does
    not already measure, all interleaved in one `time_on_ranks`.

    Training rows time a whole step of a 3-layer `width` x `width` MLP (forward, backward,
    gradient averaging, SGD); the ring-shift rows move the MLP's parameters one rank on.
    Returns {"bytes": the payload, "seconds": {row: [seconds per repetition]},
    "buckets": buckets per step of each DDP, "same_weights": DDP, DDP with small buckets
    and by-hand all_reduce took the same steps to the same weights (allclose)}.
    """
    nbytes = sum(p.numel() * p.element_size() for p in make_mlp(width).parameters())
    payload = torch.cat([p.detach().reshape(-1) for p in make_mlp(width).parameters()])
    nets = {"compute only, no sync": make_mlp(width),
            "DDP": DistributedDataParallel(make_mlp(width)),
            "DDP, small buckets": DistributedDataParallel(
                make_mlp(width), bucket_cap_mb=nbytes / 8 / 2**20),
            "all_reduce per grad": make_mlp(width)}
    calls = {row: _training_step(net, average_gradients_all_reduce if row == "all_reduce per grad"
                                 else (lambda m: None), batch, width, rank)
             for row, net in nets.items()}
    calls["ring shift, batch_isend_irecv"] = lambda: ring_shift(payload)
    calls["ring shift by all_gather"] = lambda: shift_by_all_gather(payload)
    seconds = time_on_ranks(calls, reps)
    weights = {row: torch.cat([p.detach().reshape(-1) for p in net.parameters()])
               for row, net in nets.items() if row != "compute only, no sync"}
    same = all(torch.allclose(w, weights["DDP"], atol=1e-6) for w in weights.values())
    # How many buckets each DDP used: DDP's rule, as lesson 06 checks it against DDP itself
    params = list(make_mlp(width).parameters())
    buckets = {"DDP": len(plan_buckets(params, 25 * 2**20, first_bucket_bytes=2**20)),
               "DDP, small buckets": len(plan_buckets(params, nbytes / 8))}
    return {"bytes": nbytes, "seconds": seconds, "same_weights": same, "buckets": buckets}


def demo(rank, world_size):
    """Lesson 07 demo: P2P all_gather by a ring; every rank returns [0, 1, ..., W-1]."""
    return [t.item() for t in p2p_all_gather(torch.tensor([rank]))]


if __name__ == "__main__":
    cli.main(demo)
