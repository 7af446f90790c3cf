"""The real run's per-rank timeline (the course's timeline, labs.harness.notebook.plots), with the
problems marked, saved as a PNG next to the report."""
from __future__ import annotations

from pathlib import Path

from labs.harness.ranks.tracing import Event

_OPS = {("send", True): "send", ("send", False): "isend", ("recv", True): "recv",
        ("recv", False): "irecv"}


def events(report) -> list[Event]:
    """The report's calls as the tracer's events (times from the first post)."""
    calls = [c for run in report.runs.values() for c in run.calls if not c.raised]
    if not calls:
        return []
    t0 = min(c.t_post for c in calls)
    end = max(run.t_last for run in report.runs.values()) - t0
    out = []
    for c in calls:
        op = _OPS.get((c.kind, c.blocking), c.name)
        stopped = None if c.t_done is not None else max(end, c.t_post - t0)
        out.append(Event(c.rank, op, c.peer, c.tag, c.numel, c.dtype, c.t_post - t0,
                         None if c.t_done is None else c.t_done - t0, c.batch,
                         c.blocking or not c.p2p, seq=c.seq, t_stopped=stopped))
    return out


def marks(report) -> list[tuple]:
    """(rank, time, label) of each problem: at the post of the call at its first line."""
    evs = {(e.rank, e.seq): e for e in events(report)}
    out, seen = [], set()
    for f in report.findings:
        for rank, where in f.where:
            run = report.runs.get(rank)
            call = next((c for c in run.calls if c.where == where and not c.raised), None) \
                if run else None
            if call is not None and (rank, call.seq) in evs and (rank, f.kind) not in seen:
                seen.add((rank, f.kind))
                out.append((rank, evs[(rank, call.seq)].t_post, f.kind))
    return out


def save(report, path: Path) -> Path | None:
    """Draw the timeline with the problems marked; None when nothing was recorded."""
    evs = events(report)
    if not evs:
        return None
    import matplotlib
    matplotlib.use("Agg")
    from labs.harness.notebook.plots import timeline_figure
    fig = timeline_figure(evs, title=report.command)
    ax = fig.axes[0]
    lanes = {t.get_text(): y for y, t in zip(ax.get_yticks(), ax.get_yticklabels())}
    per_rank: dict = {}
    for rank, t, kind in marks(report):
        y = lanes.get(f"rank {rank}", rank)
        k = per_rank[rank] = per_rank.get(rank, -1) + 1       # stagger a rank's labels
        ax.annotate(kind, (t * 1e3, y), color="crimson", fontsize=7, fontweight="bold",
                    xytext=(12 + 4 * k, 8 + 9 * k), textcoords="offset points", ha="left",
                    arrowprops=dict(arrowstyle="-|>", color="crimson"))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path
