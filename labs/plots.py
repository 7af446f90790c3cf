"""Plots shared by every lesson: per-rank timelines from a traced run.

    results = launch(fn, 4)
    timeline(results.trace, title="ring shift")

One lane per rank; one bar per call from post to completion (hatched: a non-blocking op
in flight; solid: the rank's thread sat in the call; grey: compute spans marked with
`labs.tracing.span`); an arrow from each send to the receive it matched (gloo matches in
FIFO order per (sender, receiver, tag)).
"""
from __future__ import annotations

from collections import defaultdict, deque

import matplotlib.pyplot as plt

COLORS = {"send": "tab:red", "isend": "tab:red", "recv": "tab:blue", "irecv": "tab:blue",
          "wait": "tab:purple", "compute": "tab:gray"}


def match_pairs(events):
    """[(send_event, recv_event)] matched as gloo does: FIFO per (src, dst, tag)."""
    queues = defaultdict(deque)
    pairs = []
    sends = sorted((e for e in events if e.op in ("send", "isend")), key=lambda e: e.t_post)
    for e in sends:
        queues[(e.rank, e.peer, e.tag)].append(e)
    for e in sorted((e for e in events if e.op in ("recv", "irecv")), key=lambda e: e.t_post):
        q = queues.get((e.peer, e.rank, e.tag))
        if q:
            pairs.append((q.popleft(), e))
    return pairs


def timeline(events, title="", ax=None, arrows=True, unit="ms"):
    """Draw a traced run; returns the matplotlib Axes."""
    scale = 1e3 if unit == "ms" else 1.0
    ranks = sorted({e.rank for e in events}) or [0]
    end = max([e.t_done or e.t_post for e in events] + [1e-6])
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.7 + 0.6 * len(ranks)))
    for e in events:
        if e.op not in COLORS and e.t_done is None:
            continue
        lane = ranks.index(e.rank)
        t_done = e.t_done if e.t_done is not None else end   # never completed: to the end
        width = max((t_done - e.t_post) * scale, end * scale * 0.002)
        ax.barh(lane, width, left=e.t_post * scale, height=0.55,
                color=COLORS.get(e.op, "tab:green"), alpha=0.35 if not e.blocking else 0.85,
                hatch="//" if not e.blocking else None, edgecolor="black", linewidth=0.3)
    if arrows:
        for s, r in match_pairs(events):
            if s.t_done is None or r.t_done is None:
                continue
            x0, x1 = s.t_post * scale, max(r.t_done, s.t_post) * scale
            ax.annotate("", xy=(x1, ranks.index(r.rank)), xytext=(x0, ranks.index(s.rank)),
                        arrowprops=dict(arrowstyle="->", color="black", lw=0.8, alpha=0.7))
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in
               ("tab:red", "tab:blue", "tab:purple", "tab:green", "tab:gray")]
    ax.legend(handles, ["send", "recv", "wait", "collective", "compute"],
              loc="upper right", fontsize=7, ncol=5, bbox_to_anchor=(1, 1.25))
    if title:
        ax.set_title(title, loc="left", fontsize=10)
    return ax
