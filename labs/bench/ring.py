"""`python -m labs.bench ring`: the course's ring all-reduces (lesson 05) vs dist.all_reduce.

Options: --world-sizes 2,4  --sizes 1K,4K,...,64M  --reps 10  --warmup 2
--variants ring,pipelined  --impl solutions|labs (benchmark your own exercises)
--out bench-results/ring.png. Results: a table (time, algbw, busbw, ratio to gloo's
all_reduce) on stdout, a plot and a JSON file under bench-results/.
"""
from __future__ import annotations

import statistics

from labs import ring
from labs.bench.results import figure_per_world_size, save
from labs.harness.launch.launcher import launch
from labs.harness.ranks.exercises import SOLUTIONS_ENV
from labs.harness.ranks.measure import algbw, busbw, format_size, parse_size

SIZES = "1K,4K,16K,64K,256K,1M,4M,16M,64M"


def _rows(world_size, nbytes, times) -> list[dict]:
    return [{"ranks": world_size, "bytes": nbytes, "variant": v, "seconds": t,
             "algbw": algbw(nbytes, t), "busbw": busbw(nbytes, t, world_size),
             "ratio": times["all_reduce"] / t} for v, t in times.items()]


def bench_ring(world_sizes=(2, 4), sizes=None, variants=("ring", "pipelined"), reps=10,
               warmup=2, impl="solutions", out="bench-results/ring.png", progress=True,
               segment_bytes=None):
    """Time each variant and dist.all_reduce at every (world size, size); print, plot, save.

    One launch per (world size, size): the variants and all_reduce run interleaved on the
    same workers (see labs.ring.time_variants), so their ratio is measured under the same
    conditions even on a busy machine. Returns the table rows.
    """
    from tqdm.auto import tqdm

    sizes = [parse_size(s) for s in SIZES.split(",")] if sizes is None else list(sizes)
    names = [v for v in variants if v != "all_reduce"] + ["all_reduce"]
    # The variants are exercises: benchmark the reference solutions unless asked otherwise.
    env = {SOLUTIONS_ENV: "1" if impl == "solutions" else "0"}
    rows = []
    with tqdm(total=len(world_sizes) * len(sizes), desc="ring vs all_reduce", unit="size",
              disable=not progress) as bar:
        for world_size in world_sizes:
            for nbytes in sizes:
                bar.set_postfix_str(f"{world_size} ranks, {format_size(nbytes)}")
                res = launch(ring.time_variants, world_size,
                             args=(names, [nbytes], reps, warmup, "float32", segment_bytes),
                             timeout=900, quiet=True, env=env)
                rows += _rows(world_size, nbytes, {v: res[0][nbytes][v] for v in names})
                bar.update()
    print_table(rows, reps=reps)
    if out:
        save_results(rows, out)
    return rows


def print_table(rows, reps=None):
    print(f"\nring all-reduce vs dist.all_reduce (gloo), float32, median of {reps} "
          f"repetitions, slowest rank; busbw = algbw * 2(n-1)/n (nccl-tests)")
    print(f"{'ranks':>5}  {'size':>8}  {'variant':<11} {'time (ms)':>10} "
          f"{'algbw (GB/s)':>13} {'busbw (GB/s)':>13} {'ring/all_reduce':>16}")
    for r in rows:
        print(f"{r['ranks']:>5}  {format_size(r['bytes']):>8}  {r['variant']:<11} "
              f"{r['seconds'] * 1e3:>10.3f} {r['algbw'] / 1e9:>13.3f} {r['busbw'] / 1e9:>13.3f} "
              f"{r['ratio']:>15.2f}x")
    print("\nbusbw ratio to all_reduce, median over sizes >= 1 MiB "
          "(> 1: faster than gloo's own all_reduce):")
    for n in sorted({r["ranks"] for r in rows}):
        for v in dict.fromkeys(r["variant"] for r in rows):
            big = [r["ratio"] for r in rows if r["ranks"] == n and r["variant"] == v
                   and r["bytes"] >= 1 << 20]
            if v != "all_reduce" and big:
                print(f"  {n} ranks  {v:<11} {statistics.median(big):.2f}x "
                      f"(min {min(big):.2f}x, max {max(big):.2f}x, {len(big)} sizes)")


def save_results(rows, out):
    """The plot at `out` (busbw and time vs size, one column per world size) + JSON."""
    world_sizes = sorted({r["ranks"] for r in rows})
    fig, axes = figure_per_world_size(world_sizes)
    for col, n in enumerate(world_sizes):
        for v in dict.fromkeys(r["variant"] for r in rows):
            pts = [r for r in rows if r["ranks"] == n and r["variant"] == v]
            x = [r["bytes"] for r in pts]
            style = dict(marker="o", ms=3, label=v, ls="--" if v == "all_reduce" else "-")
            axes[0][col].plot(x, [r["busbw"] / 1e9 for r in pts], **style)
            axes[1][col].plot(x, [r["seconds"] * 1e3 for r in pts], **style)
        axes[0][col].set(title=f"{n} ranks (gloo, loopback TCP)", ylabel="bus bandwidth (GB/s)")
        axes[1][col].set(ylabel="time (ms)", yscale="log")
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tensor size (bytes)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    save(fig, rows, out)
