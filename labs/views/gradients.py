"""Notebook 06's side: who sent how much, a timeline without start-up, the training runs'
loss curves and time per step."""
import dataclasses

import matplotlib.pyplot as plt

from labs.harness.ranks.calls import SENDS
from labs.ring import bytes_sent


def after_first_barrier(events):
    """The traced events after the last rank left the first barrier, with times counted
    from that moment: a timeline without the ranks' staggered start-up."""
    barriers = {}
    for e in events:
        if e.op == "barrier" and e.rank not in barriers:
            barriers[e.rank] = e.t_done
    t0 = max(barriers.values()) if barriers else 0.0
    return [dataclasses.replace(e, t_post=max(e.t_post - t0, 0.0),
                                t_done=None if e.t_done is None else e.t_done - t0)
            for e in events if e.op != "barrier" and (e.t_done is None or e.t_done >= t0)]


def traffic(events, world_size):
    """Per rank, from a trace: {"batches", "sends", "bytes"} it posted/sent."""
    out = []
    for r in range(world_size):
        sends = [e for e in events if e.rank == r and e.op in SENDS]
        out.append({"batches": len({e.batch for e in sends if e.batch is not None}),
                    "sends": len(sends),
                    "bytes": bytes_sent(sends)})
    return out


# ----------------------------------------------------------------------------------------
# Training runs: loss curves and the time per step
# ----------------------------------------------------------------------------------------

# One colour per method, in every figure of the lesson.
METHOD_COLORS = {"all_to_all": "tab:purple", "ring": "tab:blue", "bucketed": "tab:cyan",
          "all_reduce": "tab:green", "ddp": "black"}


def plot_losses(losses, title):
    """{method: [loss per step]}: one line per method; DDP's with markers."""
    fig, ax = plt.subplots(figsize=(7, 3))
    for m, curve in losses.items():
        ax.plot(curve, label=m, color=METHOD_COLORS.get(m), marker="o" if m == "ddp" else None,
                markersize=3, alpha=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (global batch)")
    ax.set_title(title, loc="left", fontsize=10)
    ax.legend()
    plt.show()


def step_seconds(per_rank, warmup=1):
    """{method: [seconds per step]} from compare_methods' results on every rank: per step
    the slowest rank's time, the first `warmup` steps left out (first-call costs).
    compare_methods runs the methods in turns, step by step: interleaved repetitions."""
    methods = list(per_rank[0])
    steps = len(per_rank[0][methods[0]]["step_s"])
    return {m: [max(r[m]["step_s"][i] for r in per_rank) for i in range(warmup, steps)]
            for m in methods}


def plot_step_times(table, title):
    """A Comparison (labs.harness.notebook.timing.compare): median per method, bar = range."""
    names = list(table.spreads)
    med = [table.spreads[n].median * 1e3 for n in names]
    low = [m - table.spreads[n].low * 1e3 for m, n in zip(med, names)]
    high = [table.spreads[n].high * 1e3 - m for m, n in zip(med, names)]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1))
    ax.barh(names, med, xerr=[low, high], capsize=3,
            color=[METHOD_COLORS.get(n, "tab:gray") for n in names], alpha=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("ms per training step: median, bar = range over the repetitions")
    ax.set_title(title, loc="left", fontsize=10)
    plt.show()
