"""Notebook 03's notebook-side code: what the barrier demo's trace shows (the ledger's
check, reused), the overlap timeline with its phases marked, and the per-step timings of
the overlap measurement."""
from labs.harness.notebook.plots import timeline
from labs.waiting import MODES, barriers_returned_first  # noqa: F401 (the notebook uses it)


def overlap_timeline(trace, title="", unit="ms"):
    """The timeline of lab.overlap_timing with a dashed line where each mode starts (when
    rank 0 leaves the barrier that starts it) and the mode's name above it; the untimed
    warm-up before the first mode is shaded and named. Returns the Axes."""
    ax = timeline(trace, title=title, arrows=False, unit=unit)
    scale = 1e3 if unit == "ms" else 1.0
    starts = sorted(e.t_done for e in trace if e.rank == 0 and e.op == "barrier" and e.t_done)
    if starts:
        # Before the first mode: lab.overlap_timing's untimed warm-up (one exchange, one
        # matmul), shaded and named so that nobody reads it as part of a mode.
        ax.axvspan(0, starts[0] * scale, color="grey", alpha=0.08, lw=0)
        ax.text(0, 1.16, " warm-up (untimed)", fontsize=8, transform=ax.get_xaxis_transform(),
                ha="left", va="bottom", color="dimgrey")
    for k, start in enumerate(starts):
        x = start * scale
        ax.axvline(x, color="black", lw=0.8, ls="--")
        # Names alternate between two heights: a short phase's name must not hide the next.
        ax.text(x, 1.02 + 0.14 * (k % 2), f" {MODES[k % len(MODES)]}", fontsize=8,
                transform=ax.get_xaxis_transform(), ha="left", va="bottom")
    if title:
        ax.set_title(title, loc="left", fontsize=10, pad=26)   # room for the phase names
    return ax


def step_seconds(results) -> dict:
    """mode -> seconds of each repetition of one step, from lab.overlap_timing's results:
    the slower of ranks 0 and 1 (a step is over when both ranks are done)."""
    first, second = results[0]["seconds"], results[1]["seconds"]
    return {mode: [max(a, b) for a, b in zip(first[mode], second[mode])] for mode in MODES}


def hidden_fraction(table) -> float:
    """How much of the shorter phase the overlap hid, from the medians of a
    labs.harness.notebook.timing comparison: 0 = nothing (as slow as serial), 1 = all of it."""
    median = {name: s.median for name, s in table.spreads.items()}
    shorter = min(median["transfer only"], median["matmul only"])
    return (median["serial"] - median["overlapped"]) / shorter
