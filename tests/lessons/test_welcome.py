"""Lesson 00 (labs/welcome.py): the demos behave as the notebook says."""
import pytest

import labs.views.welcome as view
import labs.welcome as lab
from labs import HangError, WorkerError, launch


def test_ranks_and_a_first_all_reduce(capsys):
    results = launch(lab.hello, 3, quiet=True)
    assert results == [0, 1, 2]
    assert results.outputs[2].strip() == "I am rank 2 of 3 (backend: gloo)"
    assert view.run_hello(4) == [10.0] * 4
    assert "sum of 1..4 = 10: correct" in capsys.readouterr().out


def test_a_failing_rank_and_a_dying_rank_are_named():
    with pytest.raises(WorkerError) as raised:
        launch(lab.fails_on_rank, 3, args=(1,), quiet=True)
    assert raised.value.ranks == [1] and "rank 1 found a bad batch" in raised.value.brief()
    with pytest.raises(WorkerError, match="SIGKILL"):
        launch(lab.die, 2, args=("kill",), quiet=True)


def test_head_to_head_blocking_sends_hang_in_send():
    with pytest.raises(HangError) as raised:
        launch(lab.head_to_head_send, 2, timeout=3, quiet=True)
    brief = raised.value.brief()
    assert "rank 0: blocked in send(to 1" in brief and "rank 1: blocked in send(to 0" in brief
