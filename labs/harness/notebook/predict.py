"""Predict, then run: a small choice the reader commits to before a hazard demo.

    guess = predict("Both ranks call dist.send first. What happens?",
                    {"completes": "both sends complete",
                     "hang": "both wait forever: a deadlock",
                     "error": "torch raises at once"})
    ...                                  # the next cell runs the demo on real workers
    guess.reveal("hang", "rank 0 and rank 1 are both blocked in send()")

The widget shows the question and the choices. `reveal(key, observed)` is called with the
verdict the run computed (never typed in by hand) and keeps it: the widget shows what the
run did only once the reader has picked a choice, and then says whether the pick was right.
Nothing is printed: under Run All (or in the stored notebook) the demo cell would give the
answer away before the reader had chosen.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
from IPython.display import display


class Prediction:
    def __init__(self, question: str, choices: dict):
        self.choices = dict(choices)
        self.buttons = widgets.RadioButtons(options=[(text, key) for key, text in self.choices.items()],
                                            value=None, layout=widgets.Layout(width="auto"))
        self.feedback = widgets.HTML("<i>Pick one, then run the next cell.</i>")
        self.box = widgets.VBox([widgets.HTML(f"<b>Predict:</b> {html.escape(question)}"),
                                 self.buttons, self.feedback])
        self.verdict, self.observed = None, ""
        self.buttons.observe(lambda change: self._compare(), names="value")

    def reveal(self, key: str, observed: str = "") -> None:
        """Keep what the run did (`key` is one of the choices; `observed`: the run's own
        words); the widget shows it once the reader has picked."""
        if key not in self.choices:
            raise ValueError(f"the run's verdict {key!r} is not one of {list(self.choices)}")
        self.verdict, self.observed = key, observed
        self._compare()

    def _compare(self) -> None:
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
                                   f"the run: <b>{right}</b>. Read on for why.")


def predict(question: str, choices: dict) -> Prediction:
    """Display a prediction widget; keep the returned object to `reveal` the run's verdict."""
    prediction = Prediction(question, choices)
    display(prediction.box)
    return prediction
