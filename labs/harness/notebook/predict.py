"""Predict, then run: a small choice the reader commits to before a hazard demo.

    guess = predict("Both ranks call dist.send first. What happens?",
                    {"completes": "both sends complete",
                     "hang": "both wait forever: a deadlock",
                     "error": "torch raises at once"})
    ...                                  # the next cell runs the demo on real workers
    with guess.held():                   # what the run prints waits for the reader's pick
        ...
        guess.reveal(verdict, "rank 0 and rank 1 are both blocked in send()")

The widget shows the question and the choices. `reveal(key, observed)` is called with the
verdict the run computed (never typed in by hand) and keeps it: the widget shows what the
run did only once the reader has picked a choice, and then says whether the pick was right.
`held()` keeps what a cell prints or draws (the run's own lines, a claim that holds, a
figure) in an output that opens with the pick: under Run All the demo cell would
otherwise give the answer away before the reader had chosen. An exception is never held:
a broken claim or a failed run is shown at once, with what the cell printed before it.
"""
from __future__ import annotations

import contextlib
import html
import sys

import ipywidgets as widgets
from IPython.core.displaypub import DisplayPublisher
from IPython.core.getipython import get_ipython
from IPython.display import display

HELD_NOTE = "<i>The run has finished; what it printed opens once you pick your prediction above.</i>"
# What a page without the widgets' state shows instead of a widget (a notebook saved
# after a run and opened again): never the answer.
HELD_TEXT = "(the run's output: it opens in the widget once you pick your prediction)"


class _Stream:
    """sys.stdout / sys.stderr while held: text goes to the held outputs, in order."""

    def __init__(self, name: str, outputs: list):
        self.name, self.outputs = name, outputs

    def write(self, text: str) -> int:
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == self.name:
            last["text"] += text
        elif text:
            self.outputs.append({"output_type": "stream", "name": self.name, "text": text})
        return len(text)

    def flush(self) -> None:
        pass


class _Displays(DisplayPublisher):
    """The shell's display publisher while held: figures and rich outputs, in order."""

    def __init__(self, outputs: list, **kwargs):
        super().__init__(**kwargs)
        self.held_outputs = outputs

    def publish(self, data, metadata=None, *args, **kwargs) -> None:
        self.held_outputs.append({"output_type": "display_data", "data": data,
                                  "metadata": metadata or {}})

    def clear_output(self, wait=False) -> None:
        self.held_outputs.clear()


def show(widget, text: str) -> None:
    """Display `widget`; `text` is what a page without the widget's state shows instead."""
    bundle = widget._repr_mimebundle_()
    display({**bundle, "text/plain": text}, raw=True)


@contextlib.contextmanager
def _captured(outputs: list):
    shell = get_ipython()
    saved = sys.stdout, sys.stderr, shell.display_pub if shell else None
    sys.stdout, sys.stderr = _Stream("stdout", outputs), _Stream("stderr", outputs)
    if shell:
        shell.display_pub = _Displays(outputs, shell=shell)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        if shell:
            shell.display_pub = saved[2]


def _replay(outputs: list) -> None:
    """Show held outputs as the cell would have (before an exception is raised)."""
    for out in outputs:
        if out["output_type"] == "stream":
            getattr(sys, out["name"]).write(out["text"])
        else:
            display(out["data"], metadata=out["metadata"], raw=True)


class Prediction:
    def __init__(self, question: str, choices: dict):
        self.question, self.choices = question, dict(choices)
        self.buttons = widgets.RadioButtons(options=[(text, key) for key, text in self.choices.items()],
                                            value=None, layout=widgets.Layout(width="auto"))
        self.feedback = widgets.HTML("<i>Pick one, then run the next cell.</i>")
        self.box = widgets.VBox([widgets.HTML(f"<b>Predict:</b> {html.escape(question)}"),
                                 self.buttons, self.feedback])
        self.verdict, self.observed = None, ""
        self.held_views: list[tuple[widgets.HTML, widgets.Output]] = []
        self.buttons.observe(lambda change: self._compare(), names="value")

    def reveal(self, key: str, observed: str = "") -> None:
        """Keep what the run did (`key` is one of the choices; `observed`: the run's own
        words); the widget shows it once the reader has picked."""
        if key not in self.choices:
            raise ValueError(f"the run's verdict {key!r} is not one of {list(self.choices)}")
        self.verdict, self.observed = key, observed
        self._compare()

    @contextlib.contextmanager
    def held(self):
        """Keep what the block prints or displays until the reader has picked; shown at
        once if they already have. An exception is not held: the block's outputs so far
        are shown, then the exception propagates."""
        outputs: list = []
        try:
            with _captured(outputs):
                yield
        except BaseException:
            _replay(outputs)
            raise
        note, out = widgets.HTML(HELD_NOTE), widgets.Output()
        out.outputs = tuple(outputs)
        self.held_views.append((note, out))
        self._show_held()
        show(widgets.VBox([note, out]), HELD_TEXT)

    def _show_held(self) -> None:
        picked = self.buttons.value is not None
        for note, out in self.held_views:
            note.layout.display = "none" if picked else None
            out.layout.display = None if picked else "none"

    def _compare(self) -> None:
        self._show_held()
        if self.verdict is None:
            return
        if self.buttons.value is None:
            self.feedback.value = ("<i>The run has finished. Pick your prediction to see "
                                   "what it did.</i>")
            return
        right = html.escape(self.choices[self.verdict]) + (
            f" ({html.escape(self.observed)})" if self.observed else "")
        if self.buttons.value == self.verdict:
            self.feedback.value = f"&#10004; You predicted it: <b>{right}</b>."
        else:
            self.feedback.value = (f"&#10008; You predicted "
                                   f"<i>{html.escape(self.choices[self.buttons.value])}</i>; "
                                   f"the run: <b>{right}</b>. Open \"Why\" below the run.")


def predict(question: str, choices: dict) -> Prediction:
    """Display a prediction widget; keep the returned object to `reveal` the run's verdict."""
    prediction = Prediction(question, choices)
    show(prediction.box, f"Predict: {question}")
    return prediction
