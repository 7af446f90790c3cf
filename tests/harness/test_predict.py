"""Predict, then run: the widget keeps the run's answer until the reader has picked."""
import sys
from pathlib import Path

import nbformat
import pytest

from labs.harness.notebook.predict import Prediction

CHOICES = {"completes": "both sends complete", "hang": "both wait forever: a deadlock"}


def test_the_answer_waits_for_a_pick(capsys):
    guess = Prediction("Both ranks send first. What happens?", CHOICES)
    guess.reveal("hang", "rank 0 blocked in send()")        # Run All: nobody has picked
    assert capsys.readouterr().out == ""                    # nothing printed gives it away
    assert "deadlock" not in guess.feedback.value and "blocked" not in guess.feedback.value
    assert "Pick your prediction" in guess.feedback.value
    guess.buttons.value = "completes"                       # the reader's click
    assert "You predicted" in guess.feedback.value
    assert "both wait forever: a deadlock (rank 0 blocked in send())" in guess.feedback.value


def test_a_pick_before_the_run_is_compared_when_it_ends():
    guess = Prediction("Both ranks send first. What happens?", CHOICES)
    guess.buttons.value = "hang"
    assert "deadlock" not in guess.feedback.value           # no run yet, no answer
    guess.reveal("hang")
    assert guess.feedback.value.startswith("&#10004; You predicted it")


def test_a_verdict_that_is_not_a_choice_is_refused():
    guess = Prediction("?", CHOICES)
    try:
        guess.reveal("error")
    except ValueError as exc:
        assert "'error' is not one of" in str(exc)
    else:
        raise AssertionError("reveal accepted a verdict that is no choice")


def _held_texts(guess) -> list[str]:
    return [o.get("text", "") for _, out in guess.held_views for o in out.outputs]


def test_what_a_held_block_prints_opens_with_the_pick(capsys):
    guess = Prediction("Both ranks send first. What happens?", CHOICES)
    with guess.held():
        print("claim holds: both ranks block in send")
        print("oops", file=sys.stderr)
        guess.reveal("hang")
    said = capsys.readouterr()
    assert "claim holds" not in said.out + said.err and "oops" not in said.out + said.err
    assert _held_texts(guess) == ["claim holds: both ranks block in send\n", "oops\n"]
    (note, out), = guess.held_views
    assert out.layout.display == "none" and note.layout.display is None   # closed, a note
    guess.buttons.value = "completes"
    assert out.layout.display is None and note.layout.display == "none"   # open


def test_a_reader_who_picked_first_sees_the_held_output_at_once():
    guess = Prediction("?", CHOICES)
    guess.buttons.value = "hang"
    with guess.held():
        print("both blocked")
    (note, out), = guess.held_views
    assert out.layout.display is None and note.layout.display == "none"


def test_an_exception_is_never_held(capsys):
    guess, before = Prediction("?", CHOICES), sys.stdout
    with pytest.raises(AssertionError, match="claim BROKEN"):
        with guess.held():
            print("rank 0: ran")
            raise AssertionError("claim BROKEN: sends complete")
    assert capsys.readouterr().out == "rank 0: ran\n"     # shown with the error, at once
    assert guess.held_views == []
    assert sys.stdout is before                           # printing is the cell's again


LESSONS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PREDICTING = [p for p in LESSONS if "predict(" in p.read_text()]


def unheld(path: Path) -> list[str]:
    """Each prediction of a lesson, from its predict() cell to the cell that reveals its
    verdict: every code cell between that shows something must hold it, and the prose
    that explains it must be folded (<details>): between the two, or right after the
    reveal (unless a new section starts there)."""
    cells = nbformat.read(path, as_version=4).cells
    problems = []
    for start, cell in enumerate(cells):
        if cell.cell_type != "code" or "predict(" not in cell.source:
            continue
        end = next((k for k in range(start + 1, len(cells)) if ".reveal(" in cells[k].source),
                   None)
        if end is None:
            problems.append(f"cell {start}: its verdict is never revealed")
            continue
        for k in range(start + 1, end + 1):
            c = cells[k]
            if c.cell_type == "code" and c.outputs and not c.source.startswith("with guess.held()"):
                problems.append(f"cell {k} ({c.source.splitlines()[0]!r}) shows its output "
                                f"before the pick of cell {start}")
        folded = [c.source.startswith("<details>") for c in cells[start:end]
                  if c.cell_type == "markdown"]
        prose = next((c for c in cells[end + 1:] if c.cell_type == "markdown"), None)
        if prose is not None and not prose.source.startswith(("<details>", "#")) \
                and not any(folded):
            problems.append(f"cell {start}: the prose after its demo is not folded: "
                            f"{prose.source.splitlines()[0]!r}")
    return problems


@pytest.mark.parametrize("path", PREDICTING, ids=lambda p: p.name)
def test_every_prediction_holds_its_answer_until_the_pick(path):
    problems = unheld(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
