"""`python -m labs.bench algorithms`: lesson 10's all-reduces and best_all_reduce vs gloo's.

Options: --world-sizes 2,4  --sizes 4K,...,16M  --names ring,doubling,halving-doubling,best
--reps 15  --warmup 2  --out bench-results/algorithms.png. Gloo's all_reduce runs twice
per repetition ("all_reduce again"): the ratio of a call to itself is the run's noise floor.
"""
from __future__ import annotations

import statistics

from labs import algorithms
from labs.bench.results import figure_per_world_size, save
from labs.harness.launch.launcher import launch
from labs.harness.notebook.timing import compare
from labs.harness.ranks.measure import format_size, parse_size

SIZES = "4K,16K,64K,256K,1M,4M,16M"
NAMES = "ring,doubling,halving-doubling,best"
AGAIN = "all_reduce again"


def _row(world_size, nbytes, names, reps, warmup, model) -> dict:
    samples = launch(algorithms.time_calls, world_size, args=(names, [nbytes], reps, warmup, model),
                     timeout=900, quiet=True)[0][nbytes]
    return {"ranks": world_size, "bytes": nbytes, "samples": samples,
            "choice": algorithms.choose(world_size, nbytes, model),
            "model": [model.alpha, model.beta, model.gamma]}


def bench_algorithms(world_sizes=(2, 4), sizes=None, names=None, reps=15, warmup=2,
                     out="bench-results/algorithms.png", progress=True):
    """Time lesson 10's all-reduces and gloo's at every (world size, size), interleaved.

    The model best_all_reduce chooses by is fitted once per world size (labs.algorithms.
    fit_model) and used for every size. Prints a table of ratios (gloo's median time / the
    algorithm's; > 1: faster than gloo), saves a plot and a JSON file. Returns the rows.
    """
    from tqdm.auto import tqdm

    sizes = list(sizes or [parse_size(s) for s in SIZES.split(",")])
    names = [n for n in names or NAMES.split(",") if n not in ("all_reduce", AGAIN)]
    # gloo's, first: every ratio is against it; and gloo's again, interleaved like the rest:
    # the ratio of a call to itself is what this run's noise alone makes of a ratio
    names = ["all_reduce", AGAIN] + names
    rows = []
    with tqdm(total=len(world_sizes) * len(sizes), desc="algorithms vs all_reduce",
              unit="size", disable=not progress) as bar:
        for world_size in world_sizes:
            model = launch(algorithms.fit_model, world_size, quiet=True)[0]
            for nbytes in sizes:
                bar.set_postfix_str(f"{world_size} ranks, {format_size(nbytes)}")
                rows.append(_row(world_size, nbytes, names, reps, warmup, model))
                bar.update()
    print_table(rows, names, reps)
    if out:
        save_results(rows, names, out)
    return rows


def print_table(rows, names, reps):
    print(f"\nall-reduce algorithms vs dist.all_reduce (gloo), float32, {reps} interleaved "
          f"repetitions, slowest rank; ratio = gloo median / median (> 1: faster than gloo)")
    others = [n for n in names if n != "all_reduce"]
    print(f"{'ranks':>5}  {'size':>8}  {'gloo ms (min-max)':>22}" +
          "".join(f"{n:>18}" for n in others) + "  best: its choice; verdict")
    for r in rows:
        s = r["samples"]
        gloo = statistics.median(s["all_reduce"])
        cells = "".join(f"{gloo / statistics.median(s[n]):>17.2f}x" for n in others)
        note = compare(s).verdict("best", "all_reduce") if "best" in s else ""
        print(f"{r['ranks']:>5}  {format_size(r['bytes']):>8}  {gloo * 1e3:>8.3f} "
              f"({min(s['all_reduce']) * 1e3:.3f}-{max(s['all_reduce']) * 1e3:.3f})"
              f"{cells}  {r['choice']}; {note}")
    if "best" in names:
        ratios = [statistics.median(r["samples"]["all_reduce"]) /
                  statistics.median(r["samples"]["best"]) for r in rows]
        print(f"\nbest_all_reduce / gloo: lowest ratio {min(ratios):.2f}x, "
              f"{sum(x >= 1.0 for x in ratios)} of {len(ratios)} cells >= 1.0x")
    if AGAIN in names:
        noise = [statistics.median(r["samples"]["all_reduce"]) /
                 statistics.median(r["samples"][AGAIN]) for r in rows]
        print(f"noise floor: gloo's all_reduce against itself ({AGAIN!r}) measured "
              f"{min(noise):.2f}x to {max(noise):.2f}x in this run; a ratio inside that band "
              f"says nothing about which call is faster")


def save_results(rows, names, out):
    """Per world size: median time and ratio to gloo vs size; the rows as JSON next to it."""
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
