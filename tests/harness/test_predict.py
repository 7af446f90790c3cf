"""Predict, then run: the widget keeps the run's answer until the reader has picked."""
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
