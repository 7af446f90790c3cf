"""Plots shared by every lesson: per-rank timelines of a traced run, and a scrubber.

    results = launch(fn, 4)
    timeline(results.trace, title="ring shift")    # the whole run, one picture
    scrub(results.trace)                           # a slider: the run, event by event
    print(summary(results.trace))                  # the same calls as stable text

One lane per rank. Each call is a bar from the moment it was posted to the moment it
completed: solid for calls the rank's thread sat in (send, recv, wait, collectives),
pale and hatched for a non-blocking isend/irecv in flight, grey for compute spans marked
with `labs.harness.ranks.tracing.span`. Bars of one rank that overlap in time are stacked inside its
lane (the thread's calls on top, requests in flight below). An arrow joins each send to
the receive it matched (gloo matches FIFO per (sender, receiver, tag)); it starts when
both sides had been posted -- the earliest the data could move -- and ends when the
receive completed. A red dashed outline marks a call that never completed. (An isend or
irecv bar ends when the program saw it complete: at its wait() or is_completed().)
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from labs.harness.ranks.calls import RECEIVES, SENDS, fifo_pairs, wrap_calls
from labs.harness.notebook.figures import detached_axes
from labs.harness.notebook.stepper import step_slider

# One palette for every picture of the course: timelines and schedule drawings alike.
OP_COLORS = {"send": "tab:red", "isend": "tab:red", "recv": "tab:blue", "irecv": "tab:blue",
          "wait": "tab:purple", "compute": "tab:gray", "collective": "tab:green"}


def match_pairs(events):
    """[(send_event, recv_event)] matched as gloo does: FIFO per (src, dst, tag).
    Receives from any source (peer None) are not matched: the trace does not say who sent."""
    sends = sorted((e for e in events if e.op in SENDS), key=lambda e: e.t_post)
    recvs = sorted((e for e in events if e.op in RECEIVES), key=lambda e: e.t_post)
    pairs, _ = fifo_pairs((((e.rank, e.peer, e.tag), e) for e in sends),
                          (((e.peer, e.rank, e.tag), e) for e in recvs))
    return pairs


def _short(e) -> str:
    if e.op in SENDS:
        return f"{e.op}\u2192{e.peer}"
    if e.op in RECEIVES:
        return f"{e.op}\u2190{'any' if e.peer is None else e.peer}"
    if e.op == "compute":
        return e.label or "compute"
    return e.op


def _color(e) -> str:
    return OP_COLORS.get(e.op, OP_COLORS["collective"])


def _rows(events, end):
    """Row of each event inside its lane: the thread's own calls first (they only overlap
    when a span encloses calls), then requests in flight; greedy, no overlaps in a row."""
    row_of, nrows = {}, 0
    for group in ([e for e in events if e.blocking], [e for e in events if not e.blocking]):
        ends = []
        for e in sorted(group, key=lambda e: e.t_post):
            t_done = e.t_done if e.t_done is not None else end
            for i, last in enumerate(ends):
                if e.t_post >= last:
                    ends[i], row_of[id(e)] = t_done, nrows + i
                    break
            else:
                ends.append(t_done)
                row_of[id(e)] = nrows + len(ends) - 1
        nrows += len(ends)
    return row_of, max(nrows, 1)


def timeline_size(events) -> tuple:
    """The figure size a timeline of these events gets (part of the figure's text repr,
    which the notebook tests compare: keep it)."""
    return (9, 0.7 + 0.6 * len(_Lanes(events).ranks))


def timeline_figure(events, **kwargs):
    """A timeline drawn on a figure outside pyplot (see figures.detached_axes): for widget
    callbacks. Show it with labs.harness.notebook.figures.show (in any kernel)."""
    fig, ax = detached_axes(timeline_size(events))
    timeline(events, ax=ax, **kwargs)
    return fig


def timeline(events, title="", ax=None, arrows=True, unit="ms", *, upto=None,
             highlight=None, labels=True, legend=True):
    """Draw a traced run; returns the matplotlib Axes.

    upto:      only what had happened by this time (seconds, the trace's clock): later
               calls are hidden, calls still running are drawn up to `upto`.
    highlight: an event to outline in black (the scrubber's current step).
    """
    lanes, kinds = _Lanes(events), {_kind(e) for e in events}
    if upto is not None:
        events = [e for e in events if e.t_post <= upto]
    if ax is None:
        _, ax = plt.subplots(figsize=timeline_size(events))
    picture = _Timeline(ax, lanes, events, unit, upto)
    never = False
    for e in events:
        never |= picture.bar(e, highlight=e is highlight, label=labels)
    if arrows:
        picture.arrows(events)
    ranks = lanes.ranks
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks])
    ax.set_ylim(len(ranks) - 0.5, -0.5)
    if upto is not None:        # the whole run's extent, and a line at "now"
        ax.axvline(upto * picture.scale, color="black", lw=0.8, ls=":")
    ax.set_xlim(0, max(picture.end, lanes.full_end) * picture.scale * 1.02)
    ax.set_xlabel(f"time ({unit})")
    if legend:
        ax.legend(handles=_legend(kinds, arrows, never), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  fontsize=7, frameon=False, borderaxespad=0.0)
    if title:
        ax.set_title(title, loc="left", fontsize=10)
    return ax


class _Lanes:
    """One lane per rank; rows inside a lane come from the whole run, so bars keep their
    place while scrubbing."""

    height = 0.8

    def __init__(self, events):
        self.ranks = sorted({e.rank for e in events}) or [0]
        self.full_end = max([e.t_last() for e in events] + [1e-6])
        self.rows, self.nrows = {}, {}
        for r in self.ranks:
            rows_r, self.nrows[r] = _rows([e for e in events if e.rank == r], self.full_end)
            self.rows.update(rows_r)

    def y(self, e) -> float:
        lane, n = self.ranks.index(e.rank), self.nrows[e.rank]
        return lane - self.height / 2 + (self.rows[id(e)] + 0.5) * self.height / n

    def bar_height(self, e) -> float:
        return self.height / self.nrows[e.rank] * 0.82


class _Timeline:
    """The bars and arrows of one timeline, as of time `upto` (None: the end of the run)."""

    def __init__(self, ax, lanes: _Lanes, events, unit, upto):
        self.ax, self.lanes, self.upto = ax, lanes, upto
        self.scale = 1e3 if unit == "ms" else 1.0
        self.end = (max(upto, 1e-6) if upto is not None else
                    max([e.t_last() for e in events] + [1e-6]))

    def done(self, e):
        """When `e` completed, if it had by `upto`."""
        if e.t_done is None or (self.upto is not None and e.t_done > self.upto):
            return None
        return e.t_done

    def bar(self, e, highlight: bool, label: bool) -> bool:
        """Draw one call; True if the run ended with it incomplete."""
        ax, scale, full_end = self.ax, self.scale, self.lanes.full_end
        t_done = self.done(e)
        running = t_done is None
        finished_late = running and self.upto is None
        # A call that never completed lasts to its error, or to the moment the launch
        # stopped its rank (a hang), or (scrubbing) to `upto`.
        stopped = e.t_last() if e.t_last() > e.t_post else self.end
        right = t_done if t_done is not None else min(stopped, self.end)
        width = max((right - e.t_post) * scale, full_end * scale * 0.003)
        height = self.lanes.bar_height(e)
        pale = not e.blocking or running
        edge, lw, ls = "black", 0.3, "-"
        if finished_late:
            edge, lw, ls = "red", 1.3, "--"
        if highlight:
            edge, lw, ls = "black", 2.2, "-"
        y = self.lanes.y(e)
        ax.barh(y, width, left=e.t_post * scale, height=height, color=_color(e),
                alpha=0.4 if pale else 0.85, hatch="//" if not e.blocking else None,
                edgecolor=edge, linewidth=lw, linestyle=ls)
        if e.error and e.t_error is not None and (self.upto is None or e.t_error <= self.upto):
            ax.plot([e.t_error * scale], [y], marker="x", color="red", markersize=8)
        if label and width >= 0.07 * full_end * scale and height > 0.15:
            ax.text(e.t_post * scale + width / 2, y, _short(e), ha="center",
                    va="center", fontsize=7, clip_on=True)
        return finished_late

    def arrows(self, events):
        """Send to receive: from when both sides were posted to when the receive completed."""
        for s, r in match_pairs(events):
            r_done = self.done(r)
            if r_done is None:
                continue
            x0 = max(s.t_post, r.t_post) * self.scale
            self.ax.annotate("", xy=(r_done * self.scale, self.lanes.y(r)),
                             xytext=(x0, self.lanes.y(s)),
                             arrowprops=dict(arrowstyle="-|>", color="black", lw=0.9,
                                             alpha=0.75, shrinkA=0, shrinkB=0))


def _kind(e) -> str:
    """The legend entry an event is drawn as."""
    if e.op in ("send", "recv", "isend", "irecv", "wait", "compute"):
        return e.op
    return "collective"


def _legend(kinds: set, arrows: bool, never: bool) -> list:
    """Only the kinds this run has (a legend entry with nothing drawn is noise)."""
    entries = [("send", Patch(facecolor=OP_COLORS["send"], alpha=0.85, label="send (blocking)")),
               ("isend", Patch(facecolor=OP_COLORS["isend"], alpha=0.4, hatch="//",
                               label="isend in flight")),
               ("recv", Patch(facecolor=OP_COLORS["recv"], alpha=0.85, label="recv (blocking)")),
               ("irecv", Patch(facecolor=OP_COLORS["irecv"], alpha=0.4, hatch="//",
                               label="irecv in flight")),
               ("wait", Patch(facecolor=OP_COLORS["wait"], alpha=0.85, label="wait")),
               ("collective", Patch(facecolor=OP_COLORS["collective"], alpha=0.85,
                                    label="collective")),
               ("compute", Patch(facecolor=OP_COLORS["compute"], alpha=0.85, label="compute (span)"))]
    handles = [patch for kind, patch in entries if kind in kinds]
    if arrows and kinds & {"send", "recv", "isend", "irecv"}:
        handles.append(Line2D([], [], color="black", marker=">", markersize=5,
                              label="matched pair: data moves"))
    if never:
        handles.append(Patch(facecolor="white", edgecolor="red", linestyle="--",
                             label="never completed"))
    return handles


# ----------------------------------------------------------------------------------------
# Step by step
# ----------------------------------------------------------------------------------------

def moments(events):
    """The run as a list of moments in time order: (t, rank, verb, event). Every call has
    a start ('calls', 'posts', 'starts') and, if it finished, an end ('returns from',
    'sees complete', 'ends')."""
    out = []
    for e in events:
        start, finish = (("starts", "ends") if e.op == "compute" else
                         ("calls", "returns from") if e.blocking else
                         ("posts", "sees complete"))
        out.append((e.t_post, 0, e.rank, start, e))
        if e.t_done is not None:
            out.append((e.t_done, 1, e.rank, finish, e))
    out.sort(key=lambda m: (m[0], m[1], m[2]))
    return [(t, rank, verb, e) for t, _, rank, verb, e in out]


def describe_moment(moment, unit="ms") -> str:
    t, rank, verb, e = moment
    scale = 1e3 if unit == "ms" else 1.0
    return f"t = {t * scale:.3f} {unit}: rank {rank} {verb} {e.describe()}"


def summary(events) -> str:
    """Each rank's calls in order, and whether each completed: stable text (no timings)."""
    lines = []
    for r in sorted({e.rank for e in events}):
        calls = [f"{e.describe()}{'' if e.t_done is not None else ' [never completed]'}"
                 for e in events if e.rank == r]
        lines += wrap_calls(f"rank {r}: ", calls, 100)
    return "\n".join(lines)


def scrub(events, title="", unit="ms"):
    """An ipywidgets view of a recorded run: drag "step" to redraw the timeline up to that
    moment; the text under it says what happened then. Returns the widget (display it)."""
    steps = moments(events)
    if not steps:
        raise ValueError("the trace is empty: nothing to scrub through")

    def draw(k, ax):
        t, _, _, e = steps[k]
        timeline(events, title=title or f"step {k} of {len(steps) - 1}", upto=t, highlight=e,
                 unit=unit, ax=ax)

    return step_slider(len(steps), draw, lambda k: f"step {k}: {describe_moment(steps[k], unit)}",
                       figsize=timeline_size(events), play=True)
