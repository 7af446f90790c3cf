"""Notebook 07's side: the cost of each collective (table, verdicts, plot), the "which
approach when" table, and the message-pattern explorer."""
from __future__ import annotations

import labs.collectives as lab
from labs import launch_exercise
from labs.harness.notebook.figures import detached_axes, show
from labs.harness.notebook.plots import timeline
from labs.harness.notebook.timing import compare

IMPLEMENTATION_COLORS = {"P2P (yours)": "tab:orange", "torch.distributed": "tab:green"}


def cost_tables(costs):
    """{op: Comparison of its P2P version and its built-in} from lab.time_collectives."""
    return {op: compare({"P2P": t["p2p"], "built-in": t["builtin"]}) for op, t in costs.items()}


def print_costs(costs):
    """Median and range of each version, in ms, and the verdict computed from the ranges."""
    print(f"{'collective':<11} {'P2P: median [range] ms':>25} {'built-in: median [range] ms':>30}"
          "   verdict")
    for op, table in cost_tables(costs).items():
        cells = "".join(f"{s.median * 1e3:>13.2f} [{s.low * 1e3:5.2f}-{s.high * 1e3:6.2f}]"
                        for s in table.spreads.values())
        print(f"{op:<11} {cells}   {short_verdict(table, 'P2P', 'built-in')}")


def plot_costs(costs, title):
    """Grouped bars per collective: medians, error bars = range over the repetitions."""
    fig, ax = detached_axes((7, 2.8))
    tables = cost_tables(costs)
    for offset, (label, name) in zip((-0.2, 0.2), (("P2P (yours)", "P2P"),
                                                   ("torch.distributed", "built-in"))):
        spreads = [t.spreads[name] for t in tables.values()]
        med = [s.median * 1e3 for s in spreads]
        ax.bar([i + offset for i in range(len(tables))], med, 0.4, label=label,
               color=IMPLEMENTATION_COLORS[label], alpha=0.85,
               yerr=[[m - s.low * 1e3 for m, s in zip(med, spreads)],
                     [s.high * 1e3 - m for m, s in zip(med, spreads)]], capsize=3)
    ax.set_xticks(range(len(tables)), list(tables))
    ax.set_ylabel("ms per call (median, bar = range)")
    ax.set_title(title, loc="left", fontsize=10)
    ax.legend()
    show(fig)


def short_verdict(table, a, b):
    """The verdict without its 'a vs b: ' prefix."""
    return table.verdict(a, b).split(": ", 1)[1]


# ----------------------------------------------------------------------------------------
# "Which approach when": each row a job, measured, and what it is compared with
# ----------------------------------------------------------------------------------------

def approaches_table(measured, costs, use):
    """A markdown table from lab.approaches' rows and section 3's broadcast and gather.

    `use`: {approach: "reach for it for ..."}. Each row: the job, its median (range), what it
    is compared with, that median (range), and the verdict computed from the ranges.
    """
    seconds = dict(measured["seconds"])
    for op in ("broadcast", "gather"):
        seconds[op], seconds[f"p2p_{op}"] = costs[op]["builtin"], costs[op]["p2p"]
    table = compare(seconds)
    mb = measured["bytes"] / 1e6
    buckets = measured["buckets"]
    rows = [
        ("DDP", f"train step, {mb:.2f} MB of grads, {buckets['DDP']} bucket (default cap)",
         "DDP", "compute only, no sync"),
        ("DDP with bucketing",
         f"train step, bucket_cap_mb = model / 8: {buckets['DDP, small buckets']} buckets",
         "DDP, small buckets", "DDP"),
        ("all_reduce", "train step, all_reduce per grad after backward",
         "all_reduce per grad", "DDP"),
        ("broadcast", "1 MiB from rank 0 (section 3)", "broadcast", "p2p_broadcast"),
        ("gather", "1 MiB per rank to rank 0 (section 3)", "gather", "p2p_gather"),
        ("batch_isend_irecv", f"ring shift of {mb:.2f} MB", "ring shift, batch_isend_irecv",
         "ring shift by all_gather"),
    ]
    lines = ["| approach | job measured (4 ranks) | ms: median (range) | compared with | "
             "ms: median (range) | verdict | reach for it for |",
             "|---|---|---:|---|---:|---|---|"]
    for name, job, key, other in rows:
        lines.append(f"| **{name}** | {job} | {_ms(table, key)} | {other} | {_ms(table, other)} "
                     f"| {short_verdict(table, key, other)} | {use[name]} |")
    return "\n".join(lines)


def _ms(table, name):
    s = table.spreads[name]
    return f"{s.median * 1e3:.2f} ({s.low * 1e3:.2f}-{s.high * 1e3:.2f})"


def show_pattern(op="all_to_all", world_size=4):
    """Run one P2P collective on fresh workers; count its messages, draw its timeline."""
    res = launch_exercise(lab.show, world_size, args=(op,), quiet=True)
    sends = [e for e in res.trace if e.op == "isend"]
    ranks = f"{world_size} rank{'s' if world_size != 1 else ''}"
    if not sends:       # one rank: its data is already where the collective puts it
        print(f"{op} on {ranks}: no messages (a rank has no one to send to), so no timeline "
              f"to draw; move the slider to 2 or more ranks")
        return
    print(f"{op} on {ranks}: {len(sends)} messages, "
          f"{len({(e.rank, e.batch) for e in sends})} (rank, batch) pairs with sends")
    # A figure outside pyplot, shown once drawn: in JupyterLab a widget's click can run
    # while another thread flushes every pyplot figure (a blank or half-drawn PNG).
    fig, ax = detached_axes((9, 0.7 + 0.6 * world_size))
    timeline(res.trace, title=f"{op}, {world_size} ranks", ax=ax)
    show(fig)
