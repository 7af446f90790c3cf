"""Lesson 04 (labs/deadlocks.py): the catalogue's behaviour. Each hang is diagnosed, each
error and each silent corruption is what the notebook says."""
from concurrent.futures import ThreadPoolExecutor

import pytest

import labs.deadlocks as lab
import labs.views.deadlocks as view
from labs import HangError, WorkerError, launch


HANGS = [
    (lab.head_to_head, 2, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                           "rank 1: blocked in send(to 0, tag 0, 10 x float32)"]),
    (lab.ring_of_blocking_sends, 3, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                                     "rank 1: blocked in send(to 2, tag 0, 10 x float32)",
                                     "rank 2: blocked in send(to 0, tag 0, 10 x float32)"]),
    (lab.unmatched_recv, 2, ["rank 0: blocked in barrier()",
                             "rank 1: blocked in recv(from 0, tag 0, 10 x float32)"]),
    (lab.tag_mismatch, 2, ["rank 0: blocked in send(to 1, tag 1, 10 x float32)",
                           "rank 1: blocked in recv(from 0, tag 2, 10 x float32)"]),
    (lab.mismatched_order, 2, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                               "rank 1: blocked in recv(from 0, tag 1, 10 x float32)"]),
]


def _hang_brief(fn, world_size):
    try:
        launch(fn, world_size, args=(10,), quiet=True, **lab.HANG)
    except HangError as exc:
        return exc.brief()
    return "no hang"


def test_every_hang_pattern_is_diagnosed():
    # Each hang costs its 1.5 s timeout; the launches are independent, so run them together.
    with ThreadPoolExecutor(len(HANGS)) as pool:
        briefs = list(pool.map(lambda h: _hang_brief(h[0], h[1]), HANGS))
    for (fn, _, expected), brief in zip(HANGS, briefs):
        assert brief.splitlines() == [f"  {line}" for line in expected], (fn.__name__, brief)


def test_blocking_exchange_deadlocks_and_the_fixes_do_not(monkeypatch):
    with pytest.raises(HangError) as info:
        launch(lab.exchange_run, 2, args=("blocking", 10), quiet=True, **lab.HANG)
    assert "rank 1: blocked in send(to 0, tag 0, 10 x float32)" in info.value.brief()
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    for how in ("batched", "parity", "checked"):
        results = launch(lab.exchange_run, 4, args=(how, 1000), quiet=True)
        assert not view.corruption(results) and all(isinstance(r, dict) for r in results), how


def test_self_send_fails_at_the_call():
    with pytest.raises(WorkerError) as info:
        launch(lab.send_to_self, 2, quiet=True)
    assert info.value.ranks == [0, 1]
    assert all("Pair is not connected" in c for c in info.value.causes.values())
    with pytest.raises(WorkerError) as info:
        launch(lab.blocking_send_to_self, 2, quiet=True)
    assert all(c.startswith("ValueError: Invalid destination rank")
               for c in info.value.causes.values())


def test_size_and_dtype_mismatches_are_silent():
    got = {fn.__name__: launch(fn, 2, args=(4,), quiet=True)[1]["got"]
           for fn in (lab.larger_recv_buffer, lab.other_dtype_same_bytes,
                      lab.float32_into_float64)}
    assert got["larger_recv_buffer"].tolist() == [0.0, 1.0, 2.0, 3.0, -1.0, -1.0]
    assert got["other_dtype_same_bytes"].tolist() == [0, 1065353216, 1073741824, 1077936128]
    assert got["float32_into_float64"].tolist()[2:] == [-1.0, -1.0]
    assert got["float32_into_float64"][0].item() == 0.0078125   # bits of (0.0f, 1.0f)


def test_smaller_recv_buffer_kills_the_receiver():
    with pytest.raises(WorkerError) as info:
        launch(lab.smaller_recv_buffer, 2, args=(10,), quiet=True)
    assert info.value.ranks == [1]
    assert info.value.causes[1] == "was killed by signal SIGABRT"
    assert view.abort_reason(info.value).startswith(
        "op.preamble.length <= op.nbytes. 40 vs 20. Received data size doesn't match")


def test_timeout_closes_the_pair():
    results = launch(lab.timeout_closes_pair, 2, quiet=True)
    assert results[0] == [
        "wait(timeout=1 s): Timed out waiting 1000ms for recv operation to complete",
        "send to rank 1: Application timeout caused pair closure",
        "barrier: Application timeout caused pair closure"]
    assert results[1] == ["recv from rank 0: Connection closed by peer"]


def test_checked_exchange_raises_on_both_ranks(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    with pytest.raises(WorkerError) as info:
        launch(lab.checked_run, 2, args=("shape",), quiet=True)
    assert info.value.ranks == [0, 1]
    assert all(c.startswith("ValueError: checked_exchange") for c in info.value.causes.values())


def test_explore_reports_each_kind_of_outcome(monkeypatch, capsys):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    expected = {"batched exchange (exercise 1)": "ok",
                "float32 into float64": "silent corruption",
                "send to self": "error",
                "recv buffer smaller": "error",
                "tag mismatch": "hang"}
    for pattern, outcome in expected.items():
        assert view.explore(pattern, world_size=3, numel=10, plot=False) == outcome, pattern
    out = capsys.readouterr().out
    assert "rank 1: received 10 x float32 [0, 1, 2, 3, ...]: correct" in out
    assert "rank 2: no receive to check" in out           # odd world size: rank 2 sits out
    assert "rank 1: was killed by signal SIGABRT" in out
    assert "rank 1: blocked in recv(from 0, tag 2, 10 x float32)" in out
    with pytest.raises(ValueError, match="unknown pattern"):
        view.explore("no such pattern")


def test_run_hazard_names_what_the_run_did(capsys):
    hang = view.run_hazard(lab.head_to_head, 2, args=(10,), quiet=True, **lab.HANG)
    assert (hang.verdict, hang.results) == ("hang", None)
    assert isinstance(hang.error, HangError)
    assert view.run_hazard(lab.send_to_self, 2, quiet=True).verdict == "error"
    killed = view.run_hazard(lab.smaller_recv_buffer, 2, args=(10,), quiet=True)
    assert killed.verdict == "killed"
    assert view.abort_reason(killed.error).startswith("op.preamble.length <= op.nbytes")
    silent = view.run_hazard(lab.larger_recv_buffer, 2, args=(4,), quiet=True)
    assert silent.verdict == "completes" and silent.results[1]["got"].numel() == 6
    out = capsys.readouterr().out        # each failure's stable brief is printed
    assert "rank 0: blocked in send(to 1, tag 0, 10 x float32)" in out
    assert "rank 1: was killed by signal SIGABRT" in out


def test_explore_runs_exercise_patterns_in_the_learners_state(monkeypatch):
    # Solved or not, an exercise pattern runs: the learner's body or the reference.
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    assert view.explore("batched exchange (exercise 1)", world_size=2, plot=False) == "ok"
    assert view.explore("checked exchange, sizes differ (exercise 2)", world_size=2,
                        plot=False) == "error"


def test_explorer_widget_runs_real_workers(capsys):
    import ipywidgets as widgets
    box = view.explorer()
    controls = {type(w).__name__: w for row in box.children[:2] for w in row.children}
    assert controls["Dropdown"].description == "pattern"
    assert controls["IntSlider"].description == "world size"
    assert controls["SelectionSlider"].description == "numel"
    assert controls["Button"].description == "Run"
    assert isinstance(box.children[2], widgets.Output)
    controls["Dropdown"].value = "send to self"
    controls["Button"].click()          # outside a kernel the Output prints to stdout
    assert "send to self: world size 2, numel 10" in capsys.readouterr().out


@pytest.mark.parametrize("world_size", [2, 3])
def test_demo(world_size):
    results = launch(lab.demo, world_size, quiet=True)
    for rank, text in enumerate(results):
        prev = (rank - 1) % world_size
        assert text == f"got {[1000.0 * prev + i for i in range(3)]} from rank {prev}"
