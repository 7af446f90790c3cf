"""Lesson 05: an all-reduce built from point-to-point ops, one idea at a time.

Every function below sums `tensor` in place over the default group and returns it,
exactly what `dist.all_reduce(tensor)` (SUM) does. Notation, as in the whole course: p ranks
(world_size), a tensor of n bytes, r a rank.

  naive_all_reduce           gather to rank 0 with P2P ops, sum there, send the sum back
  pass_along_all_reduce      a ring that passes whole tensors: p-1 steps
  ring_reduce_scatter        EXERCISE 1: the first half of the bandwidth-optimal ring
  ring_all_reduce            EXERCISE 2: reduce-scatter + all-gather, one
                             batch_isend_irecv([isend next, irecv prev]) per step
  pipelined_ring_all_reduce  EXERCISE 3: the same ring cut into segments, so that adding
                             one segment overlaps the transfer of the next

They share one chunking rule (`chunk_bounds`) and one ring orientation: rank r sends to
r+1 and receives from r-1 (mod p). Worker functions for notebook 05 and for
`python -m labs.bench ring` follow: comparisons with `dist.all_reduce`, bytes on the wire,
all-reduce timings. Ping-pong, bandwidths and the alpha-beta model live in
labs.harness.ranks.measure; lesson 05 introduces them, so notebook 05 calls them through this
module (`lab.ping_pong`, `lab.fit_alpha_beta`, ...). Other code imports them from there.
"""
from __future__ import annotations

import functools
import statistics

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.calls import SENDS
from labs.harness.ranks.data import rounding_unit, seeded
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.measure import time_on_ranks
# The lesson's own measuring tools, for notebook 05 (`lab.ping_pong`): names it presents.
from labs.harness.ranks.measure import (algbw, busbw, fit_alpha_beta, ping_pong,  # noqa: F401
                                        ring_model_seconds)

DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "bfloat16": torch.bfloat16, "int64": torch.int64}


# ----------------------------------------------------------------------------------------
# The chunking rule every ring variant (and the graders) use
# ----------------------------------------------------------------------------------------

def chunk_bounds(numel: int, world_size: int) -> list[tuple[int, int]]:
    """Split range(numel) into `world_size` contiguous chunks: [(start, stop), ...].

    The first numel % world_size chunks get one element more, so sizes differ by at most
    one; when numel < world_size the last chunks are empty (start == stop).
    chunk_bounds(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)].
    """
    base, extra = divmod(numel, world_size)
    bounds, start = [], 0
    for i in range(world_size):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def ring_schedule(world_size: int) -> list[str]:
    """Which chunk each rank sends and receives at every step of the ring, as text rows."""
    p = world_size
    rows = []
    for step in range(2 * (p - 1)):
        phase = "reduce-scatter" if step < p - 1 else "all-gather"
        cells = [f"r{r}: send c{(r - step - 1) % p}, recv c{(r - step - 2) % p}"
                 for r in range(p)]
        rows.append(f"step {step} ({phase:14s}) " + " | ".join(cells))
    return rows


# ----------------------------------------------------------------------------------------
# Step 1: gather to the root, sum, send back
# ----------------------------------------------------------------------------------------

def naive_all_reduce(tensor):
    """Every rank sends its tensor to rank 0, which sums and sends the sum to every rank.

    Correct, but rank 0 receives and sends p-1 full tensors while the others idle:
    its link and its adds are the bottleneck, and the cost grows with p.
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return tensor
    if rank == 0:
        # Fresh buffers: receiving into `tensor` would overwrite our own contribution.
        incoming = [torch.empty_like(tensor) for _ in range(world_size - 1)]
        ops = [dist.P2POp(dist.irecv, buf, src) for src, buf in enumerate(incoming, 1)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        for buf in incoming:
            tensor.add_(buf)
        ops = [dist.P2POp(dist.isend, tensor, dst) for dst in range(1, world_size)]
    else:
        dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, 0)])[0].wait()
        ops = [dist.P2POp(dist.irecv, tensor, 0)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return tensor


# ----------------------------------------------------------------------------------------
# Step 2: a ring that passes whole tensors
# ----------------------------------------------------------------------------------------

def pass_along_all_reduce(tensor):
    """p-1 steps; at each, send what you last received to r+1 and receive from r-1.

    After p-1 steps every rank has seen every other rank's tensor once. No rank is special,
    but every rank sends p-1 full tensors: (p-1) * n bytes, against 2(p-1)/p * n for the
    reduce-scatter + all-gather ring.
    """
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return tensor
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    outgoing = tensor.clone()            # what we forward this step
    incoming = torch.empty_like(tensor)  # never the buffer being sent (see lesson 03)
    for _ in range(world_size - 1):
        ops = [dist.P2POp(dist.isend, outgoing, nxt), dist.P2POp(dist.irecv, incoming, prev)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        tensor.add_(incoming)
        outgoing, incoming = incoming, outgoing   # forward what just arrived
    return tensor


# ----------------------------------------------------------------------------------------
# Step 3: the bandwidth-optimal ring (exercises)
# ----------------------------------------------------------------------------------------

@exercise
def ring_reduce_scatter(tensor):
    """The reduce-scatter half of the ring all-reduce, in place.

    Contract:
      * `tensor`: contiguous, any shape, any numel >= 0 (also fewer elements than ranks),
        float32 / float64 / bfloat16 / int64. Split `tensor.view(-1)` into world_size chunks
        with `chunk_bounds(numel, world_size)`.
      * Afterwards chunk `rank` of `tensor.view(-1)` holds the SUM of that chunk over all
        ranks. Other chunks hold partial sums (unspecified).
      * Returns the view `tensor.view(-1)[start:stop]` of chunk `rank`.
      * world_size == 1: nothing to do (you cannot send to yourself on gloo).
      * The method (the grader reads it from the trace): point-to-point only, around the
        ring r -> r + 1 (rank r sends only to (r + 1) % p and receives only from
        (r - 1) % p), p-1 messages per rank, each one chunk (at most ceil(numel / p)
        elements) in the tensor's own dtype: partial sums travel and are added in that
        dtype, as gloo's do.

    Hint: p-1 steps. At step s, rank r sends chunk (r - s - 1) % p to r + 1 and receives
    chunk (r - s - 2) % p from r - 1 with ONE
    `dist.batch_isend_irecv([P2POp(isend, ...), P2POp(irecv, ...)])`, into a scratch
    buffer (never into the chunk you are sending), waits for both, then adds the scratch
    into that chunk. The chunk you just added is the one you send at the next step.
    `ring_schedule(p)` prints the plan.
    """
    raise todo("notebook 05, 'Exercise 1: reduce-scatter'")


@exercise
def ring_all_reduce(tensor):
    """Ring all-reduce: SUM over the default group, in place; returns `tensor`.

    Contract:
      * `tensor`: contiguous, any shape, any numel >= 0 (also fewer elements than ranks or
        a numel not divisible by world_size), float32 / float64 / bfloat16 / int64;
        any world_size >= 1.
      * Equal to `dist.all_reduce(tensor)`: exactly for integers, to rounding for floats
        (the order of the additions differs). Partial sums travel and are added in the
        tensor's own dtype, as gloo does, so bfloat16 rounds at every step (the grader
        allows for that); never reduce a float32 copy of a bfloat16 tensor (twice the bytes).
      * The method (the grader reads it from the trace): point-to-point only, no
        collective, around the ring r -> r + 1 (rank r sends only to (r + 1) % p and
        receives only from (r - 1) % p); 2(p-1) messages per rank, each one chunk (at most
        ceil(numel / p) elements): 2(p-1)/p of the tensor per rank, not the whole tensor
        p-1 times.

    Hint: call your `ring_reduce_scatter(tensor)` (rank r now owns the sum of chunk r),
    then all-gather: p-1 steps where rank r sends chunk (r - s) % p to r + 1 and receives
    chunk (r - s - 1) % p from r - 1 straight into the tensor (no add), one
    `batch_isend_irecv([isend next, irecv prev])` per step.
    """
    raise todo("notebook 05, 'Exercise 2: ring all-reduce'")


@exercise
def pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):
    """The ring all-reduce with each chunk cut into segments of at most `segment_bytes`.

    Same contract as `ring_all_reduce` (in place, SUM, returns `tensor`, every shape,
    numel, dtype and world_size), for any `segment_bytes` >= 1 (a segment has at least one
    element). Every message is one segment: at most `segment_bytes` BYTES (so
    segment_bytes // tensor.element_size() elements, at least 1) and at most one chunk.

    The goal is overlap and no waiting: while you add segment k, segment k+1 is already
    on the wire, and you forward segment k to r + 1 as soon as it is summed instead of
    waiting for the whole chunk.

    Hint: number the 2(p-1) steps of the whole ring t = 0 .. 2p-3: at step t rank r sends
    chunk (r - t - 1) % p and receives chunk (r - t - 2) % p (reduce-scatter while
    t < p-1, all-gather after). Then:
      1. post every receive first, one irecv per segment, in step order (one
         batch_isend_irecv of irecv P2POps), each into its own place in a scratch tensor
         of shape (2(p-1), chunk size): one row per step;
      2. isend the segments of chunk (r - 1) % p (step 0 sends your own data);
      3. for every receive, in order: wait for it; wait for the isend still reading that
         segment of the tensor, if one is (a buffer belongs to its transfer until waited);
         add the segment into the tensor (reduce-scatter steps) or copy it there
         (all-gather steps); isend that segment of the tensor to r + 1 (unless t is the
         last step);
      4. wait for every send still in flight.
    """
    raise todo("notebook 05, 'Exercise 3: pipelined ring'")


# ----------------------------------------------------------------------------------------
# Worker functions for notebook 05 and the benchmark
# ----------------------------------------------------------------------------------------

def all_reduce_builtin(tensor):
    """`dist.all_reduce` (gloo's own ring, in C++), with the same call shape as the others."""
    dist.all_reduce(tensor)
    return tensor


VARIANTS = {
    "naive": naive_all_reduce,
    "pass-along": pass_along_all_reduce,
    "ring": ring_all_reduce,
    "pipelined": pipelined_ring_all_reduce,
    "all_reduce": all_reduce_builtin,
}


def _call(variant, tensor, segment_bytes=None):
    if segment_bytes and variant == "pipelined":
        return VARIANTS[variant](tensor, segment_bytes=segment_bytes)
    return VARIANTS[variant](tensor)


def run_variant(rank, world_size, variant, shape, dtype="float32", seed=0, segment_bytes=None):
    """Run one variant on seeded data and return this rank's result."""
    return _call(variant, seeded(rank, shape, dtype, seed), segment_bytes)


def first_values(rank, world_size, variant, numel=6):
    """Rank r contributes [10r, 10r + 1, ...]; returns the result as a list."""
    tensor = torch.arange(numel, dtype=torch.float32) + 10.0 * rank
    return _call(variant, tensor).tolist()


def reduce_scatter_demo(rank, world_size, numel=10):
    """Rank r contributes [10r, 10r + 1, ...]; returns (its chunk's bounds, the chunk)."""
    tensor = torch.arange(numel, dtype=torch.float32) + 10.0 * rank
    mine = ring_reduce_scatter(tensor)
    return chunk_bounds(numel, world_size)[rank], mine.tolist()


def compare_with_all_reduce(rank, world_size, variants, cases, seed=0, segment_bytes=None):
    """For each (variant, dtype, shape): the variant's result vs dist.all_reduce's.

    Returns {(variant, dtype, shape): {"equal": bitwise equal to all_reduce,
    "diff": max |variant - all_reduce|, "err": max |variant - exact sum|,
    "ref_err": max |all_reduce - exact sum|, "bound": max of p * 2**-8 * sum_i |x_i|}},
    the exact sum computed in float64. `bound` is the bfloat16 rounding bound.
    """
    out = {}
    for variant in variants:
        for dtype, shape in cases:
            data = seeded(rank, shape, dtype, seed)
            expected = data.clone()
            dist.all_reduce(expected)
            both = torch.stack([data.double(), data.double().abs()])
            dist.all_reduce(both)
            exact, magnitude = both[0], both[1]
            got = _call(variant, data.clone(), segment_bytes)
            out[(variant, dtype, tuple(shape))] = {
                "equal": torch.equal(got, expected),
                "diff": _biggest(got.double() - expected.double()),
                "err": _biggest(got.double() - exact),
                "ref_err": _biggest(expected.double() - exact),
                "bound": world_size * rounding_unit(torch.bfloat16) * _biggest(magnitude),
            }
    return out


def _biggest(t):
    return t.abs().max().item() if t.numel() else 0.0


def bytes_sent(events, rank=None):
    """Bytes this rank's send/isend events put on the wire (from a launch's .trace)."""
    total = 0
    for e in events:
        if e.op in SENDS and (rank is None or e.rank == rank):
            total += e.numel * getattr(torch, e.dtype).itemsize
    return total


def sample_variants(rank, world_size, variants, sizes, reps=5, warmup=1, dtype="float32",
                    segment_bytes=None):
    """Time each variant at each size, interleaved on the same workers (`time_on_ranks`).

    For every size: seeded data, every call on a fresh copy of it. Before the timings
    each variant runs once and is checked against dist.all_reduce (a wrong result
    raises); that run counts as one of the `warmup` repetitions.
    Returns {nbytes: {variant: [seconds per repetition]}}, the same on every rank.
    """
    dt = DTYPES[dtype]
    tolerance = {"float32": 1e-4, "float64": 1e-10, "int64": 0.0,
                 "bfloat16": world_size * world_size * rounding_unit(torch.bfloat16)}[dtype]
    g = torch.Generator().manual_seed(rank)
    results = {}
    for nbytes in sizes:
        numel = max(1, nbytes // dt.itemsize)
        # uniform_ is cheaper than randn for 64 MiB; values in [-1, 1) keep sums small.
        data = (torch.randint(-1000, 1000, (numel,), generator=g) if dtype == "int64" else
                torch.empty(numel, dtype=dt).uniform_(-1, 1, generator=g))
        expected = data.clone()
        dist.all_reduce(expected)
        # Every buffer allocated once per size and reused: touching fresh memory costs
        # page faults, several times the cost of the copy itself.
        work, diff = torch.empty_like(data), torch.empty_like(data)
        for v in variants:
            work.copy_(data)
            _call(v, work, segment_bytes)
            if torch.sub(work, expected, out=diff).abs_().max() > tolerance:
                raise AssertionError(f"{v} gave a wrong result at {nbytes} bytes")
        calls = {v: functools.partial(_call, v, work, segment_bytes) for v in variants}
        results[nbytes] = time_on_ranks(calls, reps, max(warmup - 1, 0),
                                        setup=lambda _, w=work, d=data: w.copy_(d))
        del data, expected, work, diff
    return results


def time_variants(rank, world_size, variants, sizes, reps=5, warmup=1, dtype="float32",
                  segment_bytes=None):
    """`sample_variants`, each list of repetitions reduced to its median:
    {nbytes: {variant: median seconds}} (what `python -m labs.bench ring` tabulates)."""
    samples = sample_variants(rank, world_size, variants, sizes, reps, warmup, dtype,
                              segment_bytes)
    return {nbytes: {v: statistics.median(t) for v, t in by_variant.items()}
            for nbytes, by_variant in samples.items()}


# ----------------------------------------------------------------------------------------
# Command line and torchrun
# ----------------------------------------------------------------------------------------

def demo(rank, world_size):
    """Ring all-reduce of [10r, 10r+1, ...]: every rank prints the same sums."""
    tensor = torch.arange(6, dtype=torch.float32) + 10.0 * rank
    try:
        return ring_all_reduce(tensor).tolist()
    except NotImplementedError:
        # Every rank raises before any communication, so all fall back together.
        return ("ring_all_reduce is not written yet (exercise 2); the pass-along ring "
                f"gives {pass_along_all_reduce(tensor).tolist()}")


if __name__ == "__main__":
    cli.main(demo)
