"""Lesson 10: beyond the ring. Trees, recursive doubling, halving-doubling, and choosing.

  tree_broadcast(tensor, src)        EXERCISE 1: binomial tree, ceil(log2 p) rounds
  tree_reduce / star_reduce          the broadcast's tree backwards; lesson 07's star for a reduce
  recursive_doubling_all_reduce(t)   EXERCISE 2: log2 p exchanges of the whole tensor
  halving_doubling_all_reduce(t)     EXERCISE 3: halving reduce-scatter + doubling all-gather
  best_all_reduce(t)                 the duel's winner (model's pick vs gloo), saved per size class

World sizes that are not a power of two: `fold_in` adds each extra rank's tensor into a
partner among the first 2^k ranks, `fold_out` sends it the result. The engine behind
best_all_reduce (plans, their executor, the model that prices them) is labs/plans.py; the
duel with gloo's own all_reduce and the file that keeps its verdicts, labs/choices.py
(`calibrate` here measures again).
"""
from __future__ import annotations

import functools

import torch
import torch.distributed as dist

from labs import ring  # noqa: F401 - the exercises' hints use ring.chunk_bounds
from labs.collectives import p2p_broadcast, p2p_gather
from labs.harness.commands import cli
from labs.harness.ranks import measure, tracing
from labs.harness.ranks.data import rounding_unit, seeded
from labs.harness.ranks.exercises import exercise, todo
from labs import choices
from labs.plans import (ALGORITHMS, CLOSE_CALL, LIBRARY, Model, Step,  # noqa: F401
                        choose_plan, flat_view, plan, plan_seconds,
                        power_of_two_below, predict, run_algorithm, run_plan, scratch,
                        steps_of)

# ---- Helpers: the power-of-two fold (flat_view, scratch, power_of_two_below: labs.plans) --

def fold_in(flat):
    """Fold the extra ranks in: rank x >= q (q = power_of_two_below(p)) sends its tensor to
    rank x - q, which adds it to its own. Returns True on the ranks 0..q-1 that go on to
    exchange among themselves, False on the extra ranks (they wait in `fold_out`)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    q = power_of_two_below(p)
    if rank >= q:
        dist.send(flat, rank - q)
        return False
    if rank + q < p:
        incoming = scratch(flat.numel(), flat.dtype)
        dist.recv(incoming, rank + q)
        flat.add_(incoming)
    return True


def fold_out(flat):
    """The way back: rank x - q sends the finished sum to extra rank x."""
    rank, p = dist.get_rank(), dist.get_world_size()
    q = power_of_two_below(p)
    if rank >= q:
        dist.recv(flat, rank - q)
    elif rank + q < p:
        dist.send(flat, rank + q)


# ---- Exercises -------------------------------------------------------------------------

@exercise
def tree_broadcast(tensor, src):
    """Binomial-tree broadcast: rank `src`'s `tensor` into `tensor` on every rank.

    Contract: like `dist.broadcast(tensor, src)`: in place (unchanged on `src`), returns
    `tensor`; same shape and dtype on every rank, any dtype, any world size (1 included).
    Point-to-point ops only, ceil(log2 p) rounds: every rank receives once, from its parent,
    then forwards to its children; the holders double every round (notebook 10 lists them).

    Hint: in relative ranks v = (rank - src) % p, a rank v > 0 receives from v minus its
    highest set bit, then sends to v + m for every power of two m > v (ascending) with
    v + m < p. Back to ranks: (v + src) % p.
    """
    raise todo("notebook 10, section 1 'Exercise 1: tree broadcast'")


@exercise
def recursive_doubling_all_reduce(tensor):
    """Recursive doubling all-reduce: SUM over the default group, in place; returns `tensor`.

    Contract: like lesson 05's `ring_all_reduce`: contiguous `tensor`, any shape and numel
    (0 included), float32 / float64 / bfloat16 / int64 (added in its own dtype), any world
    size. Point-to-point ops only: log2 q exchanges of the whole tensor among the
    q = power_of_two_below(p) first ranks, plus the fold when p != q.

    Hint: `if fold_in(flat):` then for mask = 1, 2, 4, ... < q: exchange the whole tensor
    with rank ^ mask (ONE batch_isend_irecv of an isend of `flat` and an irecv into
    `scratch(numel, dtype)`), wait for both, add the received tensor. Finish with
    `fold_out(flat)` on every rank.
    """
    raise todo("notebook 10, section 2 'Exercise 2: recursive doubling'")


@exercise
def halving_doubling_all_reduce(tensor):
    """Recursive halving + doubling (Rabenseifner): SUM in place, returns `tensor`.

    Contract: that of `recursive_doubling_all_reduce`. Method: after `fold_in`, cut the
    tensor into q chunks (`ring.chunk_bounds(numel, q)`). Reduce-scatter by halving: for
    mask = q/2, ..., 1 send half of the chunks you are responsible for to rank ^ mask and
    add the other half from it; rank r ends with the sum of chunk r (nearest partner first,
    mask = 1, ..., q/2, is the same algorithm with the chunks' owners renumbered: right
    too). All-gather by doubling: the same steps in reverse, received in place. 2(q-1)/q
    of the tensor per rank, like the ring, in 2 log2 q steps. Then `fold_out`.

    Hint: keep the range of chunks [lo, hi) you are responsible for (start: [0, q)). At
    each step mid = (lo + hi) // 2; if rank & mask you keep [mid, hi) and send [lo, mid),
    else the opposite; receive into `scratch`, add into the half you keep. Remember each
    step's (peer, kept, sent) to undo them in reverse order in the all-gather.
    """
    raise todo("notebook 10, section 3 'Exercise 3: halving-doubling'")


# ---- Rooted collectives that are not exercises -----------------------------------------

def tree_reduce(tensor, dst):
    """Binomial-tree reduce (SUM) onto `dst`, like `dist.reduce`; returns `tensor`. The
    broadcast's tree (`tree_broadcast`, `tree_children`) run backwards: each rank receives
    and adds its children's partial sums in the reverse of the order the broadcast serves
    them (farthest child first), then sends its own partial sum to its parent. Every
    message of the broadcast, reversed, in the reverse order. Other ranks keep a partial
    sum."""
    flat = flat_view(tensor)
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - dst) % p
    for child in reversed(tree_children(v, p)):
        incoming = scratch(flat.numel(), flat.dtype)
        dist.recv(incoming, (child + dst) % p)
        flat.add_(incoming)
    if v > 0:
        dist.send(flat, (tree_parent(v) + dst) % p)
    return tensor


def tree_parent(v):
    """The binomial tree's parent of relative rank v > 0: v minus its highest set bit."""
    return v - (1 << (v.bit_length() - 1))


def tree_children(v, p):
    """The relative ranks v sends to in the broadcast, in order: v + m for every power of
    two m > v (1 for the root) with v + m < p."""
    out, mask = [], 1 << v.bit_length()
    while v + mask < p:
        out.append(v + mask)
        mask <<= 1
    return out


def star_reduce(tensor, dst):
    """Lesson 07's star, used for a reduce: `p2p_gather` to `dst`, which adds in rank order."""
    parts = p2p_gather(tensor, dst)
    return tensor if parts is None else tensor.copy_(torch.stack(parts).sum(0))


# ---- best_all_reduce: the duel's verdict per size class, measured once and saved --------

def best_all_reduce(tensor):
    """SUM over the default group in place, like `dist.all_reduce`; returns `tensor`. Any
    shape, numel, dtype, world size; a non-contiguous tensor through a contiguous copy
    written back. Runs what labs.choices decided for this world size and size class: the
    model's pick where a duel measured it clearly faster than gloo's own all_reduce, else
    gloo's. Decided per machine (saved in .p2p-cache/best_all_reduce.json), the same on
    every rank; the first call at a size class in a process reads the file (a saved pick
    is confirmed by a few pairs first, measured again if it loses) or runs the duel."""
    p = dist.get_world_size()
    if p == 1 or tensor.numel() == 0:       # every rank has the same numel: all return
        return tensor
    if not tensor.is_contiguous():
        tensor.copy_(best_all_reduce(tensor.contiguous()))
        return tensor
    return run_algorithm(choices.decided(p, tensor.numel() * tensor.element_size()), tensor)


def calibrate(sizes=choices.CLASSES):
    """Measure again, on these ranks, now: the model and the duel at every size class of
    `sizes`, saved over what the file held. A collective. {class: labs.choices.Verdict}."""
    return choices.calibrate(sizes)


def fit(sizes=choices.CLASSES, reps=5):
    """The alpha-beta-gamma Model fitted on these ranks (a collective; rank 0's fit)."""
    return choices.fit(sizes, reps)


# ---- Worker functions for notebook 10 and `python -m labs.bench algorithms` ------------

def _star_broadcast(tensor, src):
    return p2p_broadcast(tensor, src)              # lesson 07's exercise


# Everything notebook 10 and the benchmark run, by name: fn(tensor), in place.
CALLS = {
    "all_reduce": lambda t: dist.all_reduce(t),
    "all_reduce again": lambda t: dist.all_reduce(t),    # the same call: a run's noise floor
    **{a: functools.partial(run_algorithm, a) for a in ALGORITHMS},
    "best": best_all_reduce,
    "recursive_doubling_all_reduce": recursive_doubling_all_reduce,
    "halving_doubling_all_reduce": halving_doubling_all_reduce,
    "broadcast": lambda t: dist.broadcast(t, 0),
    "tree_broadcast": lambda t: tree_broadcast(t, 0),
    "star_broadcast": lambda t: _star_broadcast(t, 0),
    "reduce": lambda t: dist.reduce(t, 0),
    "tree_reduce": lambda t: tree_reduce(t, 0),
    "star_reduce": lambda t: star_reduce(t, 0),
}


def tree_demo(rank, world_size, src=0):
    """What each rank holds after tree_broadcast of [100, 101, 102] from `src`, and on
    `src` the sum of the ranks' numbers that tree_reduce brings."""
    tensor = torch.arange(100, 103) if rank == src else torch.zeros(3, dtype=torch.int64)
    got = tree_broadcast(tensor, src).tolist()
    total = tree_reduce(torch.full((1,), rank), src)
    return got, total.item() if rank == src else None


def run_calls(rank, world_size, names, numel):
    """Each named call once on `numel` seeded floats, the trace cleared before each:
    {name: this rank's (op, peer, numel) for every point-to-point op and collective}."""
    out = {}
    for name in names:
        tensor = seeded(rank, (numel,), "float32")
        tracing.TRACER.events.clear()
        CALLS[name](tensor)
        out[name] = [(e.op, e.peer, e.numel) for e in tracing.TRACER.events if e.op != "wait"]
    return out


def compare(rank, world_size, names, cases, runs=None, seed=0):
    """Each all-reduce in `names` vs dist.all_reduce: {(name, dtype, shape): (max |diff|,
    allowed)}; allowed: 0 for int64, bfloat16's n * 2**-8 * sum|x| (lesson 05), else 1e-5.
    `runs` ({nbytes: what best_all_reduce runs}): decided without measuring."""
    choices.set_choices(world_size, runs or {})
    out = {}
    for dtype, shape in cases:
        data = seeded(rank, shape, dtype, seed)
        expected, magnitude = data.clone(), data.double().abs()
        dist.all_reduce(expected)
        dist.all_reduce(magnitude)
        biggest = magnitude.max().item() if data.numel() else 0.0
        allowed = {"int64": 0.0, "bfloat16": world_size * rounding_unit(torch.bfloat16) * biggest}.get(
            dtype, 1e-5 * max(biggest, 1.0))
        for name in names:
            got = data.clone()
            CALLS[name](got)                 # in place: the tensor it was given holds the sum
            diff = (got.double() - expected.double()).abs()
            out[(name, dtype, tuple(shape))] = (diff.max().item() if data.numel() else 0.0,
                                                allowed)
    return out


def time_calls(rank, world_size, names, sizes, reps=5, warmup=1):
    """Time each call at each size, interleaved on these workers (labs.harness.ranks.measure.time_on_ranks:
    every call after a barrier, on a fresh copy of seeded float32 data, the slowest rank's
    time), in a new shuffled order every repetition (`shuffled`). Returns {nbytes: {name:
    [seconds per repetition]}}, the same on every rank. best_all_reduce decides at every
    size first (file or duel), outside the timings."""
    if "best" in names and world_size > 1:
        decide_sizes(rank, world_size, sizes)
    g = torch.Generator().manual_seed(rank)
    results = {}
    for nbytes in sizes:
        data = torch.empty(max(1, nbytes // 4)).uniform_(-1, 1, generator=g)
        work = torch.empty_like(data)        # one buffer per size: no page faults in timings
        calls = {name: functools.partial(CALLS[name], work) for name in names}
        results[nbytes] = shuffled(calls, reps, warmup, setup=lambda name: work.copy_(data))
    return results


def shuffled(calls, reps, warmup, setup=None):
    """measure.time_on_ranks, one repetition at a time, each in its own order (a seeded
    shuffle: the same on every rank). A rotation keeps each call behind the same neighbour,
    and a gloo collective right after the engine's point-to-point messages was measured
    slower than right after another collective: a fixed order would charge one call for it."""
    names, out = list(calls), {name: [] for name in calls}
    order = torch.Generator().manual_seed(len(names))
    for rep in range(warmup + reps):
        perm = torch.randperm(len(names), generator=order).tolist()
        got = measure.time_on_ranks({names[i]: calls[names[i]] for i in perm}, 1, 0, setup)
        if rep >= warmup:
            for name in names:
                out[name] += got[name]
    return out


def gloo_duels(rank, world_size, nbytes, duels=5, pairs=9):
    """gloo's all_reduce against itself, `duels` times `pairs` interleaved pairs on these
    workers: [{name: [seconds]}] per duel (notebook 10: what a short duel makes of noise)."""
    names = ["all_reduce", "all_reduce again"]
    return [time_calls(rank, world_size, names, [nbytes], pairs, 1)[nbytes]
            for _ in range(duels)]


def fit_model(rank, world_size, sizes=choices.CLASSES, reps=5):
    """Worker: `fit` on these workers; returns the Model (the same on every rank)."""
    return fit(sizes, reps)


def calibrate_here(rank, world_size, sizes=choices.CLASSES):
    """Worker: `calibrate` on these workers; {class: Verdict}, the same on every rank."""
    return calibrate(sizes)


def decide_sizes(rank, world_size, sizes):
    """Worker: best_all_reduce once at each size (outside any timing), so that its choices
    are made (read from the file or measured now). [(nbytes, what runs, source)], where
    source says whether the file had it ('saved') or the duel ran now ('measured')."""
    out = []
    for nbytes in sizes:
        del choices.LOG[:]
        best_all_reduce(work := torch.zeros(max(1, nbytes // 4)))
        source = choices.LOG[0][2] if choices.LOG else "this process"
        out.append((nbytes, choices.decided(world_size, work.nbytes), source))
    return out


def demo(rank, world_size):
    """best_all_reduce of [10r, 10r + 1, 10r + 2, 10r + 3]: every rank prints the same sums."""
    return best_all_reduce(torch.arange(4, dtype=torch.float32) + 10.0 * rank).tolist()


if __name__ == "__main__":
    cli.main(demo)
