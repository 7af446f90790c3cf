"""`python -m labs.bench algorithms`: lesson 10's all-reduces and best_all_reduce vs gloo's.

Options: --world-sizes 2,4  --sizes 4K,...,16M  --names ring,doubling,halving-doubling,best
--reps 45  --warmup 2  --back-to-back 1  --out bench-results/algorithms.png  --cache FILE
--calibrate. Medians: the typical call, the waits for a CPU core included. Gloo's all_reduce
runs twice per repetition ("all_reduce again"): the ratio of a call to itself is the run's
noise floor. `--back-to-back N`: each timed call is N calls back to back between two
barriers (as a training step reduces its gradient buckets), the time per call.
best_all_reduce uses the choices saved in its file (the learner's
.p2p-cache/best_all_reduce.json unless --cache): a saved pick is confirmed first, the ones
missing are measured.
"""
from __future__ import annotations

import functools
import statistics

import torch

from labs import algorithms, choices
from labs.bench.results import figure_per_world_size, save
from labs.harness.launch.launcher import launch
from labs.harness.ranks.measure import format_size, parse_size

SIZES = "4K,16K,64K,256K,1M,4M,16M"
NAMES = "ring,doubling,halving-doubling,best"
AGAIN = "all_reduce again"


def _row(world_size, nbytes, names, reps, warmup, decided, env, burst=1) -> dict:
    samples = launch(time_back_to_back, world_size, args=(names, [nbytes], reps, warmup, burst),
                     timeout=900, quiet=True, env=env)[0][nbytes]
    return {"ranks": world_size, "bytes": nbytes, "samples": samples,
            "choice": decided[nbytes][0], "source": decided[nbytes][1]}


def time_back_to_back(rank, world_size, names, sizes, reps=5, warmup=1, burst=1):
    """Worker: labs.algorithms.time_calls with each timed call made `burst` times back to
    back between the barriers; seconds per call. burst=1: time_calls itself."""
    if burst == 1:
        return algorithms.time_calls(rank, world_size, names, sizes, reps, warmup)
    if "best" in names and world_size > 1:
        algorithms.decide_sizes(rank, world_size, sizes)
    g, results = torch.Generator().manual_seed(rank), {}
    for nbytes in sizes:
        data = torch.empty(max(1, nbytes // 4)).uniform_(-1, 1, generator=g)
        work = torch.empty_like(data)

        def calls_of(name):
            for _ in range(burst):
                algorithms.CALLS[name](work)
        got = algorithms.shuffled({n: functools.partial(calls_of, n) for n in names}, reps,
                                  warmup, setup=lambda name: work.copy_(data))
        results[nbytes] = {n: [t / burst for t in ts] for n, ts in got.items()}
    return results


def bench_algorithms(world_sizes=(2, 4), sizes=None, names=None, reps=45, warmup=2,
                     out="bench-results/algorithms.png", progress=True, cache=None,
                     calibrate=False, burst=1):
    """Time lesson 10's all-reduces and gloo's at every (world size, size), interleaved.

    best_all_reduce's choices come from its file (`cache`, default the learner's
    .p2p-cache/best_all_reduce.json); a size class it does not hold is measured (the duel)
    before the timings, and `calibrate` measures every one again. Prints a table of ratios
    of medians (gloo's / the call's; > 1: faster than gloo) next to gloo against
    itself, and a verdict per cell; saves a plot and a JSON file. Returns the rows.
    `burst`: each timed call is `burst` calls back to back (time per call).
    """
    from tqdm.auto import tqdm

    sizes = list(sizes or [parse_size(s) for s in SIZES.split(",")])
    names = [n for n in names or NAMES.split(",") if n not in ("all_reduce", AGAIN)]
    # gloo's, first: every ratio is against it; and gloo's again, interleaved like the rest:
    # the ratio of a call to itself is what this run's noise alone makes of a ratio
    names = ["all_reduce", AGAIN] + names
    env = {choices.CACHE_ENV: str(cache)} if cache else {}
    if "best" in names:
        print(f"best_all_reduce's choices: {choices.shown(cache or choices.cache_path())}")
    rows = []
    with tqdm(total=len(world_sizes) * len(sizes), desc="algorithms vs all_reduce",
              unit="size", disable=not progress) as bar:
        for world_size in world_sizes:
            decided = _decisions(world_size, sizes, env, calibrate) if "best" in names \
                else {n: ("-", "not timed") for n in sizes}
            for nbytes in sizes:
                bar.set_postfix_str(f"{world_size} ranks, {format_size(nbytes)}")
                rows.append(_row(world_size, nbytes, names, reps, warmup, decided, env,
                                 burst))
                bar.update()
    print_table(rows, names, reps, burst)
    if out:
        save_results(rows, names, out)
    return rows


def _decisions(world_size, sizes, env, calibrate) -> dict:
    """{nbytes: (what best_all_reduce runs, where that came from)}, on fresh workers."""
    if calibrate:
        launch(algorithms.calibrate_here, world_size, args=(sizes,), timeout=900, quiet=True,
               env=env)
    return {n: (what, "measured" if calibrate else source) for n, what, source in
            launch(algorithms.decide_sizes, world_size, args=(sizes,), timeout=900,
                   quiet=True, env=env)[0]}


def ratio(samples, name, base="all_reduce") -> float:
    """Median of `base` over that of `name`: > 1, `name`'s typical call took less."""
    return statistics.median(samples[base]) / statistics.median(samples[name])


def bounds(times, base, resamples=2000, level=0.99) -> tuple[float, float]:
    """A `level` interval of median(base) / median(times), the repetitions resampled (a
    repetition stays whole: its calls shared the moment); a fixed seed, the same every run."""
    n = len(times)
    rows = torch.randint(n, (resamples, n), generator=torch.Generator().manual_seed(0))
    med = [torch.tensor(t, dtype=torch.float64)[rows].median(dim=1).values
           for t in (base, times)]
    ratios, tail = med[0] / med[1], (1 - level) / 2
    return ratios.quantile(tail).item(), ratios.quantile(1 - tail).item()


def noise_band(rows) -> float:
    """The run's noise floor: the largest factor by which gloo's all_reduce differed from
    itself (medians, interleaved) in any cell. A ratio within [1/f, f] says nothing."""
    return max(max(r, 1 / r) for r in (ratio(row["samples"], AGAIN) for row in rows))


def cell_verdict(samples, band: float) -> str:
    """Beyond the noise only if both say so: the ratio is outside the run's noise floor
    (gloo against itself), and its 99% interval (repetitions resampled) excludes 1. One
    draw of gloo/gloo per cell is itself noisy: the band alone would call ~1 cell in 4 of
    a run 'slower' where best_all_reduce runs exactly gloo's call."""
    x = ratio(samples, "best")
    low, high = bounds(samples["best"], samples["all_reduce"])
    if x > band and low > 1:
        return f"faster than gloo beyond the noise (99%: {low:.2f}-{high:.2f})"
    if x < 1 / band and high < 1:
        return f"SLOWER than gloo beyond the noise (99%: {low:.2f}-{high:.2f})"
    return f"within the noise (99%: {low:.2f}-{high:.2f})"


def print_table(rows, names, reps, burst=1):
    how = f"{burst} calls back to back per timing" if burst > 1 else "single calls"
    print(f"\nall-reduce algorithms vs dist.all_reduce (gloo), float32, {reps} interleaved "
          f"repetitions of {how}, slowest rank; ratios of medians, gloo / call (> 1: faster "
          f"than gloo); gloo/gloo: gloo against itself, the cell's noise")
    others = [n for n in names if n not in ("all_reduce", AGAIN, "best")]
    band = noise_band(rows) if AGAIN in names else 1.0
    print(f"{'ranks':>5}  {'size':>8}  {'gloo ms':>8}  {'gloo/best':>9}  {'gloo/gloo':>9}" +
          "".join(f"{'gloo/' + n:>22}" for n in others) + "  best runs (choice from)  verdict")
    for r in rows:
        s = r["samples"]
        cells = "".join(f"{ratio(s, n):>22.2f}" for n in others)
        best = f"{ratio(s, 'best'):>9.2f}" if "best" in s else f"{'-':>9}"
        again = f"{ratio(s, AGAIN):>9.2f}" if AGAIN in s else f"{'-':>9}"
        note = cell_verdict(s, band) if "best" in s else ""
        print(f"{r['ranks']:>5}  {format_size(r['bytes']):>8}  "
              f"{statistics.median(s['all_reduce']) * 1e3:>8.3f}  {best}  {again}{cells}  "
              f"{r['choice'] + ' (' + r['source'] + ')':<24} {note}")
    if "best" in names and AGAIN in names:
        ratios = [ratio(r["samples"], "best") for r in rows]
        own = [r for r in rows if ratio(r["samples"], "best") <
               min(ratio(r["samples"], AGAIN), 1 / ratio(r["samples"], AGAIN))]
        print(f"\nnoise floor of this run: gloo against itself within {1 / band:.2f}x-"
              f"{band:.2f}x; best_all_reduce / gloo: {min(ratios):.2f}x to {max(ratios):.2f}x")
        slower = sum(cell_verdict(r["samples"], band).startswith("SLOWER") for r in rows)
        print(f"cells where best_all_reduce is slower than gloo beyond the noise (verdict): "
              f"{slower} of {len(rows)}; below the run's noise floor alone: "
              f"{sum(x < 1 / band for x in ratios)}; below its own cell's gloo/gloo: {len(own)}")
        print("cells where best_all_reduce is more than 2x faster than gloo: "
              + (", ".join(f"{r['ranks']} ranks {format_size(r['bytes'])}" for r, x in
                          zip(rows, ratios) if x > 2) or "none"))


def save_results(rows, names, out):
    """Per world size: median time and ratio to gloo vs size; the rows as JSON."""
    world_sizes = sorted({r["ranks"] for r in rows})
    fig, axes = figure_per_world_size(world_sizes, sharex=True)
    for (top, bottom), n in zip(axes.T, world_sizes):
        pts = [r for r in rows if r["ranks"] == n]
        sizes = [r["bytes"] for r in pts]
        gloo = [statistics.median(r["samples"]["all_reduce"]) for r in pts]
        for name in names:
            med = [statistics.median(r["samples"][name]) for r in pts]
            style = dict(marker="o", ms=3, label=name, ls="--" if name == "all_reduce" else "-")
            top.plot(sizes, [m * 1e3 for m in med], **style)
            bottom.plot(sizes, [g / m for g, m in zip(gloo, med)], **style)
        top.set(title=f"{n} ranks (gloo, loopback TCP)", ylabel="time (ms), median",
                yscale="log")
        bottom.set(ylabel="gloo time / time (> 1: faster)", xlabel="tensor size (bytes)",
                   xscale="log")
        bottom.axhline(1.0, color="grey", lw=0.8)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, rows, out)
