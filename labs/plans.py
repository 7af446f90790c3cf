"""Lesson 10's engine: plans, the lean executor that runs them, and the model that prices them.

A `plan` is the list of `Step`s one rank takes in one of ALGORITHMS (cached); `run_plan`
executes one with little Python per message; `predict` prices one with lesson 05's
alpha-beta model plus the additions, and `choose_plan` picks the plan a model predicts
fastest; `choose` also weighs the measured duel with gloo's own all_reduce (LIBRARY).
labs/algorithms.py builds `best_all_reduce` on them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.distributed as dist

from labs import ring


def flat_view(tensor):
    """`tensor.view(-1)`; a non-contiguous tensor is refused, as gloo refuses to send it."""
    if not tensor.is_contiguous():
        raise ValueError("this all-reduce needs a contiguous tensor (gloo sends contiguous "
                         "memory); pass tensor.contiguous() and copy the result back")
    return tensor.view(-1)


_SCRATCH: dict = {}


def scratch(numel, dtype):
    """A receive buffer of `numel` elements, kept between calls (fresh memory costs a page
    fault per 4 KiB when first written). Valid until the next call."""
    buf = _SCRATCH.get(dtype)
    if buf is None or buf.numel() < numel:
        buf = _SCRATCH[dtype] = torch.empty(numel, dtype=dtype)
    return buf[:numel]


def power_of_two_below(p):
    """The largest power of two <= p: the size of the group the doubling runs in."""
    return 1 << (p.bit_length() - 1)



# ---- Plans: the steps one rank takes, computed once; and a lean executor for them ------

@dataclass(frozen=True)
class Step:
    """One step of one rank: send elements [send) to `send_to`, receive [recv) from
    `recv_from`, then add what arrived (`add`) or let it land in place. None: no such op."""

    send_to: int | None
    send: tuple[int, int]
    recv_from: int | None
    recv: tuple[int, int]
    add: bool


ALGORITHMS = ("doubling", "halving-doubling", "ring")   # on 2 ranks the last two are equal


@functools.lru_cache(maxsize=4096)
def plan(algorithm, rank, world_size, numel):
    """The steps `rank` takes in `algorithm`, one of ALGORITHMS, for a tensor of `numel`."""
    p, whole = world_size, (0, numel)
    if p == 1 or algorithm == "ring":
        return _ring_plan(rank, p, numel)
    q = power_of_two_below(p)
    if rank >= q:                                   # an extra rank: fold in, wait, fold out
        return (Step(rank - q, whole, None, whole, False),
                Step(None, whole, rank - q, whole, False))
    core = _doubling_plan(rank, q, numel) if algorithm == "doubling" else \
        _halving_doubling_plan(rank, q, numel)
    if rank + q >= p:
        return core
    return ((Step(None, whole, rank + q, whole, True),) + core
            + (Step(rank + q, whole, None, whole, False),))


def _doubling_plan(rank, q, numel):
    whole = (0, numel)
    return tuple(Step(rank ^ (1 << k), whole, rank ^ (1 << k), whole, True)
                 for k in range(q.bit_length() - 1))


def _halving_doubling_plan(rank, q, numel):
    bounds = ring.chunk_bounds(numel, q)
    def span(lo, hi):
        return bounds[lo][0], bounds[hi - 1][1]
    lo, hi, mask, halving = 0, q, q // 2, []
    while mask:
        mid = (lo + hi) // 2
        keep, give = ((mid, hi), (lo, mid)) if rank & mask else ((lo, mid), (mid, hi))
        halving.append(Step(rank ^ mask, span(*give), rank ^ mask, span(*keep), True))
        lo, hi = keep
        mask //= 2
    doubling = [Step(s.send_to, s.recv, s.recv_from, s.send, False) for s in reversed(halving)]
    return tuple(halving + doubling)


def _ring_plan(rank, p, numel):
    bounds = ring.chunk_bounds(numel, p)
    nxt, prev = (rank + 1) % p, (rank - 1) % p
    return tuple(Step(nxt, bounds[(rank - t - 1) % p], prev, bounds[(rank - t - 2) % p],
                      t < p - 1) for t in range(2 * (p - 1)))


def run_plan(flat, steps):
    """Execute a plan on `flat` with little Python per message. Every receive is posted
    first (a gloo send waits for its receive), adding ones into their own scratch regions;
    ops go straight to the process group, past dist.isend's checks and the course's tracer
    (they are not in the trace); sends and in-place receives are views of `flat`. An
    in-place receive may target a range sent earlier: its final values can only arrive
    after the peers have received this rank's part of it."""
    group = dist.group.WORLD
    room = scratch(sum(s.recv[1] - s.recv[0] for s in steps if s.add), flat.dtype)
    receives, used = [], 0
    for s in steps:
        lo, hi = s.recv
        into = room[used:used + hi - lo] if s.add else flat[lo:hi]
        used += (hi - lo) if s.add else 0
        work = None if s.recv_from is None else group.recv([into], s.recv_from, 0)
        receives.append((into, work))
    for s, (into, work) in zip(steps, receives):
        if s.send_to is not None:
            group.send([flat[s.send[0]:s.send[1]]], s.send_to, 0).wait()
        if work is not None:
            work.wait()
            if s.add:
                flat[s.recv[0]:s.recv[1]].add_(into)
    return flat


# ---- The model: lesson 05's alpha-beta plus the additions, priced plan by plan ------

@dataclass(frozen=True)
class Model:
    """t(step) = alpha + bytes / beta + added bytes * gamma; and the duel's result."""

    alpha: float          # seconds per message
    beta: float           # bytes per second on the wire
    gamma: float = 0.0    # seconds per byte added
    # The duel (labs.algorithms.calibrate): on `ranks` ranks, at every size of `dueled`,
    # gloo's own all_reduce against choose_plan's pick; `library`: the sizes where gloo won.
    ranks: int = 0
    dueled: tuple = ()
    library: tuple = ()


def plan_seconds(steps, itemsize, model):
    """The model's time for one rank's plan: its steps one after the other."""
    total = 0.0
    for s in steps:
        moved = max(s.send[1] - s.send[0] if s.send_to is not None else 0,
                    s.recv[1] - s.recv[0] if s.recv_from is not None else 0)
        added = s.recv[1] - s.recv[0] if s.add else 0
        total += model.alpha + moved * itemsize / model.beta + added * itemsize * model.gamma
    return total


def predict(algorithm, world_size, nbytes, model):
    """Predicted seconds of an all-reduce of `nbytes`: the slowest rank's plan."""
    return max(plan_seconds(plan(algorithm, r, world_size, nbytes), 1, model)
               for r in range(world_size))


# A close call goes to the algorithm with fewer steps: the model is fitted on one idle pair of
# ranks, and every extra step is one more rendezvous, which costs more than `alpha` as soon as
# the ranks compete for the CPU. Another algorithm must be predicted this much faster to win.
CLOSE_CALL = 0.25


def steps_of(algorithm, world_size, numel=1 << 20):
    """The most steps any rank takes in `algorithm` on `world_size` ranks."""
    return max(len(plan(algorithm, r, world_size, numel)) for r in range(world_size))


@functools.lru_cache(maxsize=4096)
def choose_plan(world_size, nbytes, model):
    """The algorithm the model predicts fastest for (world_size, nbytes), unless one with
    fewer steps is predicted within CLOSE_CALL of it: then that one."""
    times = {a: predict(a, world_size, nbytes, model) for a in ALGORITHMS}
    best = min(ALGORITHMS, key=times.get)
    close = [a for a in ALGORITHMS if times[a] <= times[best] * (1 + CLOSE_CALL)]
    return min(close, key=lambda a: (steps_of(a, world_size), times[a]))


LIBRARY = "all_reduce"      # gloo's own dist.all_reduce, the candidate the duel measures


@functools.lru_cache(maxsize=4096)
def choose(world_size, nbytes, model):
    """What best_all_reduce runs: LIBRARY where the duel on this world size found gloo's
    own all_reduce faster at the dueled size nearest to `nbytes` (on a log scale), else
    choose_plan's pick. No duel (another world size, or a model without one): the plan."""
    if world_size == model.ranks and model.dueled:
        def distance(n):
            return abs(math.log2(max(n, 1)) - math.log2(max(nbytes, 1)))
        if min(model.dueled, key=distance) in model.library:
            return LIBRARY
    return choose_plan(world_size, nbytes, model)


def run_algorithm(algorithm, tensor):
    """One of ALGORITHMS on `tensor`, in place, by its cached plan, or LIBRARY (gloo's
    dist.all_reduce); returns `tensor`."""
    if algorithm == LIBRARY:
        dist.all_reduce(tensor)
        return tensor
    run_plan(flat_view(tensor), plan(algorithm, dist.get_rank(), dist.get_world_size(),
                                     tensor.numel()))
    return tensor

