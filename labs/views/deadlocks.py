"""Notebook 04's notebook-side code: run a hazard and name what it did (the verdict a
prediction is compared with), and the explorer that runs any deadlock pattern and tells
hang, error and corruption apart."""
from dataclasses import dataclass

import ipywidgets as widgets
import torch

from labs import HangError, WorkerError, launch, launch_exercise
from labs.deadlocks import PATTERNS, explore_worker
from labs.harness.ranks.gloo_text import abort_reason  # noqa: F401 - notebook 04 calls view.abort_reason
from labs.harness.notebook.figures import show
from labs.harness.notebook.plots import timeline_figure


@dataclass
class HazardRun:
    """How a hazard demo ended. `verdict`: "completes", "hang", "error" (a rank raised) or
    "killed" (a rank's process was killed); `results` if it completed, `error` otherwise."""

    verdict: str
    results: list | None = None
    error: Exception | None = None


def run_hazard(fn, world_size, args=(), **kwargs) -> HazardRun:
    """launch(fn, ...) on fresh workers; a hang or a failure is printed (its stable brief)
    and returned as the verdict, not raised."""
    try:
        return HazardRun("completes", launch(fn, world_size, args=args, **kwargs))
    except HangError as exc:
        print(exc.brief())
        return HazardRun("hang", error=exc)
    except WorkerError as exc:
        print(exc.brief())
        killed = any(cause.startswith("was killed") for cause in exc.causes.values())
        return HazardRun("killed" if killed else "error", error=exc)


def _show(t, n=4):
    """'10 x float32 [0, 1, 2, 3, ...]': a tensor's size, dtype and first values."""
    values = t.flatten()[:n].tolist()
    more = ", ..." if t.numel() > n else ""
    dtype = str(t.dtype).replace("torch.", "")
    return f"{t.numel()} x {dtype} [{', '.join(f'{v:g}' for v in values)}{more}]"


def _same(got, expected):
    return (got.shape == expected.shape and got.dtype == expected.dtype
            and torch.equal(got, expected))


def corruption(results):
    """Lines describing every rank whose received tensor differs from what was sent."""
    lines = []
    for rank, r in enumerate(results):
        if isinstance(r, dict) and not _same(r["got"], r["expected"]):
            lines.append(f"  rank {rank}: sent {_show(r['expected'])}, "
                         f"received {_show(r['got'])}")
    return lines


def _report_completed(results):
    """Print what every rank received, against what it was sent; returns the outcome."""
    wrong = corruption(results)
    print("silent corruption detected (no error was raised):" if wrong else
          "ok: completed, every receiver got exactly what was sent")
    for rank, r in enumerate(results):
        if not isinstance(r, dict):
            print(f"  rank {rank}: no receive to check")
        elif _same(r["got"], r["expected"]):
            print(f"  rank {rank}: received {_show(r['got'])}: correct")
        else:
            print(f"  rank {rank}: received {_show(r['got'])}, "
                  f"but was sent {_show(r['expected'])}")
    return "silent corruption" if wrong else "ok"


def explore(pattern, world_size=2, numel=10, pg_timeout=1.5, plot=True):
    """Run `pattern` (a key of labs.deadlocks.PATTERNS) on fresh workers; print the outcome
    and draw the per-rank timeline. Returns "ok", "hang", "error" or "silent corruption".
    A pattern that needs an exercise you have not solved yet runs the reference solution
    (and says so)."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; pick one of {list(PATTERNS)}")
    print(f"{pattern}: world size {world_size}, numel {numel}")
    try:
        results = launch_exercise(explore_worker, world_size, args=(pattern, numel),
                                  timeout=pg_timeout + 8, pg_timeout=pg_timeout, quiet=True)
        outcome, events = _report_completed(results), results.trace
    except HangError as exc:
        outcome, events = "hang", exc.trace
        print("hang: HangError")
        print(exc.brief())
    except WorkerError as exc:
        outcome, events = "error", exc.trace
        print("error: WorkerError")
        print(exc.brief())
    if plot and events:
        show(timeline_figure(events, title=f"{pattern} ({outcome})"))
    return outcome


def explorer():
    """A widget: pick a pattern, world size and numel, click Run: explore() on real workers."""
    style = {"description_width": "initial"}
    pattern = widgets.Dropdown(options=list(PATTERNS), value="head-to-head blocking sends",
                               description="pattern", style=style,
                               layout=widgets.Layout(width="420px"))
    world_size = widgets.IntSlider(value=2, min=2, max=4, description="world size", style=style)
    numel = widgets.SelectionSlider(options=[2, 10, 1000, 100_000, 1_000_000], value=10,
                                    description="numel", style=style)
    run = widgets.Button(description="Run", button_style="primary", icon="play")
    out = widgets.Output()

    def on_click(_):
        run.disabled = True
        out.clear_output(wait=True)
        try:
            with out:
                explore(pattern.value, world_size.value, numel.value)
        finally:
            run.disabled = False

    run.on_click(on_click)
    return widgets.VBox([widgets.HBox([pattern, run]), widgets.HBox([world_size, numel]), out])
