"""Predict, then run: a small choice the reader commits to before a hazard demo.

    guess = predict("Both ranks call dist.send first. What happens?",
                    {"completes": "both sends complete",
                     "hang": "both wait forever: a deadlock",
                     "error": "torch raises at once"})
    ...                                  # the next cell runs the demo on real workers
    guess.reveal("hang", "rank 0 and rank 1 are both blocked in send()")

The widget shows the question and the choices. `reveal(key, observed)` is called with the
verdict the run computed (never typed in by hand), prints it as one stable line, and tells
the reader in the widget whether the prediction was right.
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
        self.verdict = None
        self.buttons.observe(lambda change: self._compare(), names="value")

    def reveal(self, key: str, observed: str = "") -> None:
        """Show what the run did (`key` is one of the choices) and compare."""
        if key not in self.choices:
            raise ValueError(f"the run's verdict {key!r} is not one of {list(self.choices)}")
        self.verdict = key
        print(f"What the run did: {self.choices[key]}" + (f" ({observed})" if observed else ""))
        self._compare()

    def _compare(self) -> None:
        if self.verdict is None:
            return
        right = self.choices[self.verdict]
        if self.buttons.value is None:
            self.feedback.value = f"The run: <b>{html.escape(right)}</b>."
        elif self.buttons.value == self.verdict:
            self.feedback.value = f"&#10004; You predicted it: <b>{html.escape(right)}</b>."
        else:
            self.feedback.value = (f"&#10008; You predicted "
                                   f"<i>{html.escape(self.choices[self.buttons.value])}</i>; "
                                   f"the run: <b>{html.escape(right)}</b>. Read on for why.")


def predict(question: str, choices: dict) -> Prediction:
    """Display a prediction widget; keep the returned object to `reveal` the run's verdict."""
    prediction = Prediction(question, choices)
    display(prediction.box)
    return prediction
