"""Measuring on the ranks: interleaved timings, ping-pong, bandwidths, the alpha-beta model.

Lesson 05 introduces them (and `labs.ring` re-exports them under the same names); lessons
07 and 10 reuse them. The notation, the same in every lesson: a message of m bytes costs
alpha + m / beta, alpha the latency in seconds, beta the bandwidth in bytes per second.

    time_on_ranks      per-repetition times of several calls, interleaved, slowest rank
    ping_pong          one-way time of an m-byte message between ranks 0 and 1
    algbw, busbw       nccl-tests' bandwidths of an all-reduce
    fit_alpha_beta     alpha and beta from ping-pong times
    ring_model_seconds the model's price of a ring all-reduce
    parse_size, format_size  '64K' <-> 65536 <-> '64 KiB' (the benchmarks and the views)
"""
from __future__ import annotations

import statistics
import time

import torch
import torch.distributed as dist

from labs.harness.ranks import tracing


def time_on_ranks(calls, reps=5, warmup=1, setup=None):
    """Time every call of `calls` ({name: fn}) `reps` times, interleaved on these ranks.

    Per repetition each name runs once, in an order that rotates so none always goes
    first; every call starts after a barrier, `setup(name)` (untimed) just before it.
    `warmup` repetitions are not timed. Returns {name: [seconds per repetition]}, where a
    repetition's time is the slowest rank's (a collective is done when its last rank
    is): the same lists on every rank, for labs.harness.notebook.timing.compare in the notebook.
    """
    names = list(calls)
    samples = {name: [] for name in names}
    for rep in range(warmup + reps):
        first = rep % len(names)
        for name in names[first:] + names[:first]:
            if setup is not None:
                setup(name)
            dist.barrier()
            t0 = time.perf_counter()
            calls[name]()
            if rep >= warmup:
                samples[name].append(time.perf_counter() - t0)
        tracing.TRACER.events.clear()   # thousands of ops: keep the trace small
    slowest = torch.tensor([samples[name] for name in names], dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return dict(zip(names, slowest.tolist()))


def ping_pong(rank, world_size, sizes, reps=5, warmup=1):
    """Rank 0 and rank 1 bounce a message of each size; returns one-way seconds per size.

    One-way time = median round trip / 2. Other ranks (if any) just wait.
    """
    times = {}
    for nbytes in sizes:
        buf = torch.zeros(max(1, nbytes // 4))
        rounds = []
        for i in range(warmup + reps):
            if rank > 1:
                continue
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(buf, 1)
                dist.recv(buf, 1)
            else:
                dist.recv(buf, 0)
                dist.send(buf, 0)
            if i >= warmup:
                rounds.append(time.perf_counter() - t0)
        if rank == 0:
            times[nbytes] = statistics.median(rounds) / 2
        tracing.TRACER.events.clear()   # keep the trace small over many repetitions
    dist.barrier()
    return times


def algbw(nbytes, seconds):
    """Algorithm bandwidth (nccl-tests): bytes of the tensor / time, in bytes per second."""
    return nbytes / seconds


def busbw(nbytes, seconds, world_size):
    """Bus bandwidth (nccl-tests, all-reduce): algbw * 2(n-1)/n.

    A ring all-reduce moves 2(n-1)/n * N bytes through every rank's link, so busbw is what
    each link carried per second: comparable across world sizes, and with the link speed.
    """
    return algbw(nbytes, seconds) * 2 * (world_size - 1) / world_size


def fit_alpha_beta(sizes, seconds):
    """Fit t(m) = alpha + m / beta to one-way times of m-byte messages; returns (alpha in
    seconds, beta in bytes per second). The course's notation: beta is a bandwidth.

    Least squares on the *relative* error (each row divided by its t), so the 1 KiB
    points decide alpha and the large ones decide beta, instead of the largest size
    deciding everything.
    """
    rows = torch.tensor([[1.0, float(n)] for n in sizes], dtype=torch.float64)
    t = torch.tensor([float(s) for s in seconds], dtype=torch.float64)
    w = 1.0 / t
    coef = torch.linalg.lstsq(rows * w[:, None], (t * w)[:, None]).solution.flatten()
    alpha, inv_beta = coef.tolist()
    return max(alpha, 0.0), 1.0 / max(inv_beta, 1e-15)


def ring_model_seconds(nbytes, world_size, alpha, beta):
    """Alpha-beta prediction for a ring all-reduce of m = nbytes on p ranks:
    2(p-1) * (alpha + m / (p * beta)).

    2(p-1) steps, each one message of a chunk (m/p bytes). It ignores the additions and
    the CPU the ranks share, so it is a lower bound on this machine.
    """
    p = world_size
    return 2 * (p - 1) * (alpha + nbytes / (p * beta))


def parse_size(text: str) -> int:
    """'64K' -> 65536, '4M' -> 4194304, '512' -> 512 (binary units: KiB, MiB, GiB)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def format_size(nbytes: int) -> str:
    """65536 -> '64 KiB', 1536 -> '1.5 KiB', 100 -> '100 B'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"
