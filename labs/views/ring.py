"""Notebook 05's side: the bytes each rank sends, the explorer, and the measured sweep
(its table, its verdicts and its plot). Every launch goes through `launch_exercise`, so
the lesson runs to its end before the exercises are solved."""
from __future__ import annotations

import statistics

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

import labs.ring as lab
from labs import launch_exercise
from labs.harness.ranks.measure import format_size
from labs.harness.notebook.figures import detached_axes, show
from labs.harness.notebook.plots import timeline
from labs.harness.notebook.timing import compare

# One colour per variant, in every figure of the lesson.
VARIANT_COLORS = {"naive": "tab:gray", "pass-along": "tab:brown", "ring": "tab:blue",
          "pipelined": "tab:orange", "all_reduce": "tab:green"}


def tensors_sent(variant, world_size, numel, segment_bytes=None):
    """Run `variant` once on float32 data; return ([tensors sent by each rank], results)."""
    args = (variant, (numel,), "float32", 0, segment_bytes)
    res = launch_exercise(lab.run_variant, world_size, args=args)
    return [lab.bytes_sent(res.trace, r) / (numel * 4) for r in range(world_size)], res


def explore(variant="pipelined", world_size=4, kib=1024):
    """One all-reduce on fresh workers: what each rank sent, and its timeline. Pipelined
    runs use 64 KiB segments, so that a chunk has several."""
    numel = kib * 1024 // 4
    sent, res = tensors_sent(variant, world_size, numel, segment_bytes=64 << 10)
    size = format_size(numel * 4)
    print(f"{variant}, {world_size} ranks, {size}: tensors sent by each rank {sent}")
    # A figure outside pyplot, shown once drawn: in JupyterLab a widget's click can run
    # while another thread flushes every pyplot figure (a blank or half-drawn PNG).
    fig, ax = detached_axes((9, 0.7 + 0.6 * world_size))
    timeline(res.trace, title=f"{variant}, {world_size} ranks, {size}",
             arrows=variant != "pipelined", ax=ax)
    show(fig)


# ----------------------------------------------------------------------------------------
# The sweep: per world size, per size, per variant, the seconds of each repetition
# ----------------------------------------------------------------------------------------

def sweep(world_sizes, sizes, variants, reps=5):
    """{p: {nbytes: {variant: [seconds]}}}: `lab.sample_variants` on p fresh workers."""
    return {p: launch_exercise(lab.sample_variants, p, args=(variants, sizes, reps, 1),
                               timeout=300)[0]
            for p in world_sizes}


def _busbw(nbytes, seconds, p):
    """busbw in MB/s, a unit in which 1 KiB and 16 MiB both read well."""
    return lab.busbw(nbytes, seconds, p) / 1e6


def print_sweep(measured, alpha, beta):
    """busbw (MB/s) per variant, median and [range], and the ring model's busbw."""
    variants = list(next(iter(next(iter(measured.values())).values())))
    print("busbw in MB/s: median [range over the repetitions]")
    print(f"{'ranks':>5} {'size':>8}  " + "".join(f"{v:>23}" for v in variants)
          + f"{'ring model':>12}")
    for p, by_size in measured.items():
        for nbytes, by_variant in by_size.items():
            cells = ""
            for v in variants:
                t = by_variant[v]
                cells += (f"{_busbw(nbytes, statistics.median(t), p):>9.1f} "
                          f"[{_busbw(nbytes, max(t), p):5.1f}-{_busbw(nbytes, min(t), p):6.1f}]")
            model = _busbw(nbytes, lab.ring_model_seconds(nbytes, p, alpha, beta), p)
            print(f"{p:>5} {format_size(nbytes):>8}  {cells}{model:>12.1f}")


def print_verdicts(measured, pairs=(("ring", "all_reduce"), ("pipelined", "ring"))):
    """Per world size and size, each pair's verdict, computed from the repetitions."""
    for p, by_size in measured.items():
        for nbytes, by_variant in by_size.items():
            table = compare(by_variant)
            print(f"{p} ranks, {format_size(nbytes):>7}: "
                  + "; ".join(table.verdict(a, b) for a, b in pairs))


def plot_sweep(measured, alpha, beta):
    """Top: busbw (log scale); bottom: time, with the ring's alpha-beta model. Markers are
    medians, bars the range of the repetitions."""
    fig = Figure(figsize=(5.5 * len(measured), 7))      # outside pyplot: see detached_axes
    axes = fig.subplots(2, len(measured), sharex=True, squeeze=False)
    for col, (p, by_size) in enumerate(measured.items()):
        _plot_sweep_column(axes[0][col], axes[1][col], p, by_size, alpha, beta)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    show(fig)


def _plot_sweep_column(top, bottom, p, by_size, alpha, beta):
    """One world size `p`: each variant's busbw (top) and time (bottom), and the model."""
    sizes = list(by_size)
    for v in by_size[sizes[0]]:
        runs = [by_size[m][v] for m in sizes]
        med = [statistics.median(t) for t in runs]
        for ax, scale in ((top, None), (bottom, 1e3)):
            if scale is None:     # busbw: the fastest repetition is the highest
                y = [_busbw(m, s, p) for m, s in zip(sizes, med)]
                lo = [y_ - _busbw(m, max(t), p) for y_, m, t in zip(y, sizes, runs)]
                hi = [_busbw(m, min(t), p) - y_ for y_, m, t in zip(y, sizes, runs)]
            else:
                y = [s * scale for s in med]
                lo = [y_ - min(t) * scale for y_, t in zip(y, runs)]
                hi = [max(t) * scale - y_ for y_, t in zip(y, runs)]
            ax.errorbar(sizes, y, yerr=[lo, hi], marker="o", ms=4, capsize=2,
                        color=VARIANT_COLORS[v], ls="--" if v == "all_reduce" else "-", label=v)
    model = [lab.ring_model_seconds(m, p, alpha, beta) for m in sizes]
    top.plot(sizes, [_busbw(m, s, p) for m, s in zip(sizes, model)], color="black",
             lw=1, ls=":", label="alpha-beta model (ring)")
    bottom.plot(sizes, [s * 1e3 for s in model], color="black", lw=1, ls=":",
                label="alpha-beta model (ring)")
    top.set_title(f"{p} ranks")
    top.set_ylabel("bus bandwidth (MB/s, log scale)")
    bottom.set_ylabel("time per all-reduce (ms, log scale)")
    bottom.set_xlabel("tensor size")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([format_size(m) for m in sizes])
        ax.grid(alpha=0.3)
