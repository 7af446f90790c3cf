"""Issue 52 item 4: failing cases that share a cause are one problem that names the cause,
read from the evidence (which cases failed, which elements were wrong), and a line of the
body, never only its `def` line (labs/harness/grading/evidence.py)."""
import pytest

from labs.harness.grading import GradeFailure
from labs.harness.grading.evidence import CaseOutcome, one_cause
from tests.graders import test_ring

BODIES = "tests.graders.bodies.ring.report"


def _case(numel, dtype="float32", *, failed, wrong=(), kept=False, world_size=2):
    return CaseOutcome(f"{dtype}, shape ({numel},)", dtype, numel, world_size,
                       f"case ({dtype}, shape ({numel},)): rank 0 is wrong" if failed else "",
                       wrong, kept, "labs/ring.py:190")


def test_a_remainder_dropped_is_one_problem_naming_its_cause():
    outcomes = [_case(4, failed=False), _case(3, failed=True, wrong=((2, 3),), kept=True),
                _case(7, "int64", failed=True, wrong=((6, 7),), kept=True)]
    text, covered = one_cause(outcomes, "ring_all_reduce")
    assert text.startswith("labs/ring.py:190: ring_all_reduce: 2 of 3 cases fail")
    assert "only sizes not divisible by the world size fail" in text
    assert "never reduced" in text and len(covered) == 2
    assert "dtype" not in text          # the failing cases differ from the passing by size


def test_dtype_is_said_only_when_it_separates_the_cases():
    outcomes = [_case(4, failed=False), _case(4, "bfloat16", failed=True, wrong=((0, 4),)),
                _case(3, "bfloat16", failed=True, wrong=((1, 2),))]
    assert "only bfloat16 fails (float32 passes" in one_cause(outcomes, "x")[0]


def test_no_cause_claimed_without_evidence():
    """Everything non-empty fails: nothing tells the failing cases from the passing ones."""
    outcomes = [_case(0, failed=False), _case(4, failed=True, wrong=((0, 4),)),
                _case(3, failed=True, wrong=((0, 3),))]
    assert one_cause(outcomes, "x") == ("", [])


def _def_line(body) -> str:
    import inspect
    return f"{inspect.getsourcefile(body)}:{inspect.getsourcelines(body)[1]}"


def _the_one_problem(grader, body: str, world_size: int) -> str:
    """Grade `body` (module:function under tests.graders.bodies) with `grader`: it fails with
    exactly one problem, told at a line of the body's own file; that problem's text."""
    with pytest.raises(GradeFailure) as failed:
        grader(f"tests.graders.bodies.{body}", world_size)
    assert len(failed.value.problems) == 1, failed.value.problems
    text = failed.value.problems[0]
    module = body.split(":")[0].replace(".", "/")
    assert text.startswith(f"tests/graders/bodies/{module}.py:"), text
    return text


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [3, pytest.param(5, marks=pytest.mark.all_lane)])
def test_the_ring_grader_names_the_dropped_remainder_at_a_body_line(world_size):
    """A ring on numel // p chunks: one problem, its cause, the body's receive line; no dtype
    advice, no 'same bits' consequence. At 2-4 ranks the second call's check (again.py) saw
    the first wrong case inside the worker and told it alone, at the `def` line: the values
    are the grader's to say, every case grouped."""
    from tests.graders.bodies.ring import report as report_ring
    text = _the_one_problem(test_ring.test_ring_all_reduce, "ring.report:ring_drops_remainder",
                            world_size)
    assert text.split(":")[1] != _def_line(report_ring.ring_drops_remainder).rpartition(":")[2]
    assert f"at world size {world_size}, with one cause" in text
    assert "the chunks leave the remainder out" in text and "never reduced" in text
    assert "own dtype" not in text and "same bits" not in text
    assert "what the method returns on the same inputs" not in text


@pytest.mark.slow
def test_the_reduce_scatter_grader_names_the_shared_cause_at_a_body_line():
    """Lesson 05's reduce-scatter: each received chunk added up to numel // p elements only.
    Its messages are the method's; the values fail on every size p does not divide."""
    text = _the_one_problem(test_ring.test_ring_reduce_scatter,
                            "ring.report:reduce_scatter_adds_floor", 3)
    assert "at world size 3, with one cause" in text
    assert "only sizes not divisible by the world size fail" in text
    assert "still holds the rank's own input" in text and "dtype" not in text


@pytest.mark.slow
def test_the_doubling_grader_says_only_a_dtype_fails_at_a_body_line():
    """Lesson 10: recursive doubling that adds in float64: only int64 fails (beyond 2**53),
    at every size; the dtype is the cause the evidence shows, and no size is blamed."""
    from tests.graders import test_algorithms
    text = _the_one_problem(test_algorithms.test_recursive_doubling_all_reduce,
                            "algorithms.report:doubling_adds_in_float64", 3)
    assert "only int64 fails (bfloat16, float32, float64 pass on the same shapes)" in text
    assert "divisible" not in text


@pytest.mark.slow
def test_lesson_07_names_a_dropped_remainder_at_a_body_line():
    """A ring all_gather that copies each received tensor in numel // p chunks: every case
    and rank is kept (it stopped at the first wrong case), one problem names the cause."""
    from tests.graders import test_collectives
    from tests.graders.bodies.collectives import report
    text = _the_one_problem(test_collectives.test_p2p_all_gather,
                            "collectives.report:all_gather_copies_floor_chunks", 3)
    assert text.split(":")[1] != _def_line(report.all_gather_copies_floor_chunks).rpartition(
        ":")[2]
    assert "at world size 3, with one cause" in text
    assert "the chunks leave the remainder out" in text and "never received" in text
    assert "only sizes not divisible by the world size fail" in text
    assert "dtype" not in text and "never reduced" not in text


@pytest.mark.slow
def test_lesson_06_names_the_one_dtype_that_fails_at_a_body_line():
    """Gradient averaging that adds the 16-bit gradients in bfloat16: only float16 fails,
    in every case that has it; one problem says so, and blames no size."""
    from tests.graders import test_gradients
    text = _the_one_problem(test_gradients.test_average_gradients_all_to_all,
                            "gradients.report:all_to_all_sums_halves_in_bfloat16", 3)
    assert "at world size 3, with one cause" in text
    assert "only float16 fails (bfloat16, float32, float64 pass" in text
    assert "divisible" not in text and "remainder" not in text


def test_moved_data_is_compared_bit_for_bit_and_told_as_not_received():
    """Moved data: -0.0 for 0.0 or another NaN is wrong; kept elements 'never received'."""
    import torch

    from labs.harness.grading.evidence import outcome
    data = torch.tensor([0.0, 1.0, 2.0])
    expected = torch.tensor([-0.0, float("nan"), 5.0])
    got = torch.tensor([0.0, float("nan"), 2.0])
    o = outcome("c", dtype="float32", world_size=2, data=data, got=got, expected=expected,
                message="wrong", bits=True)
    assert o.wrong == ((0, 1), (2, 3)), o.wrong      # -0.0 differs; the same NaN does not
    outcomes = [_case(4, failed=False), _case(3, failed=True, wrong=((2, 3),), kept=True),
                _case(5, failed=True, wrong=((4, 5),), kept=True)]
    text = one_cause(outcomes, "p2p_all_gather", moved=True)[0]
    assert "never received" in text and "reduced" not in text


@pytest.mark.slow
def test_a_bucket_plan_bug_is_told_one_way_at_every_world_size():
    """Issue 52 item 9: a plan that counts elements, not bytes, told in the same words at 2, 3
    and 6 ranks (the numbers aside), and in the plan's words, not a probe's."""
    import re

    from tests.graders import test_gradients
    told = {}
    for world_size in (2, 3, 6):
        with pytest.raises(GradeFailure) as failed:
            test_gradients.test_average_gradients_bucketed(
                "tests.graders.bodies.gradients.report:bucketed_counts_elements", world_size)
        told[world_size] = [re.sub(r"\d+", "N", p) for p in failed.value.problems]
    assert told[2] == told[3] == told[6], told
    text = " ".join(told[2])
    assert "bucket of plan_buckets" in text and "grew with" not in text, text


@pytest.mark.slow
def test_the_ring_grader_claims_no_cause_for_a_ring_wrong_everywhere():
    with pytest.raises(GradeFailure) as failed:
        test_ring.test_ring_all_reduce(f"{BODIES}:ring_all_gather_off_by_one", 5)
    assert "with one cause" not in str(failed.value)


@pytest.mark.slow
def test_a_forbidden_collective_that_gloo_refuses_is_told_as_the_forbidden_call():
    """Issue 55 item 5: reduce_scatter_tensor on a size gloo cannot split raises gloo's C++
    check; the record is read first, and the forbidden call is the message."""
    with pytest.raises(GradeFailure) as failed:
        test_ring.test_ring_all_reduce(f"{BODIES}:ring_builtin_reduce_scatter", 2)
    assert "called reduce_scatter_tensor: the lesson builds this from point-to-point" in \
        str(failed.value)
    assert "ProcessGroupGloo" not in str(failed.value)


@pytest.mark.slow
def test_a_body_that_raises_shows_its_own_frames_not_the_graders():
    """Issue 52 item 9: the learner's traceback holds the body's line, no grader frame."""
    with pytest.raises(GradeFailure) as failed:
        test_ring.test_ring_all_reduce(f"{BODIES}:ring_reads_past_the_end", 1)
    text = str(failed.value)
    assert "ring/report.py:" in text and "IndexError" in text
    assert "tests/graders/test_" not in text, text


@pytest.mark.slow
def test_lesson_07_pattern_at_one_rank_says_so_and_draws_no_empty_plot(capsys, monkeypatch):
    """Issue 52 item 6: one rank prints no '1 ranks: 0 messages' over an empty plot."""
    from labs.views import collectives as view
    drawn = []
    monkeypatch.setattr(view, "show", drawn.append)
    view.show_pattern("gather", 1)
    said = capsys.readouterr().out
    assert "gather on 1 rank: no messages" in said and "1 ranks" not in said
    assert drawn == []


def test_a_widget_is_told_to_run_again_not_its_cell(capsys):
    """Issue 52 item 6: beside a Run button, 'run this cell again' is the wrong advice."""
    import ipywidgets

    from labs.harness.launch import unsolved
    unsolved.say_unsolved("in_a_cell", "labs/x.py")
    ipywidgets.interactive(lambda n=1: unsolved.say_unsolved("in_a_widget", "labs/x.py"),
                           n=(1, 3))
    cell, widget = capsys.readouterr().out.split("Exercise `in_a_widget`")
    assert "run this cell again" in cell and "run the widget again" in widget
    assert "this cell" not in widget


@pytest.mark.slow
def test_an_interrupt_names_every_sleeping_rank_at_its_line(tmp_path):
    """Issue 52 item 6: Jupyter interrupts the kernel's whole process group; whichever ranks
    report first, every rank asleep is named at its line (it named one, the others only
    'not inside a torch.distributed call')."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    from tests import course
    script = textwrap.dedent(f"""
        from labs import launch
        from tests.harness.test_launcher import sleep_and_record
        if __name__ == "__main__":
            launch(sleep_and_record, 3, args=({str(tmp_path)!r},), timeout=100)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=course.ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 90
    while len(list(tmp_path.glob("*.pid"))) < 3:
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)         # what Jupyter's "interrupt kernel" does
    _, err = proc.communicate(timeout=60)
    ranks = [line for line in err.splitlines() if line.startswith("  rank ")]
    assert len(ranks) == 3, err
    assert all("tests/harness/test_launcher.py:" in line for line in ranks), err


def test_only_a_size_differs_is_said_as_the_size_not_as_one_message_more():
    """Issue 52 item 9: an empty chunk received into a one-element buffer: the receives
    match the method's in number; the grade names the size, not 'received 2 messages'."""
    from labs.harness.grading.compare import Method, differences
    from labs.harness.grading.ops import Op

    def recvs(*sizes):
        return [Op("recv", "irecv", 1, n, "float32") for n in sizes]
    said = differences(recvs(1, 3), recvs(0, 3), Method(why="the method"), rank=0,
                       world_size=2)
    assert len(said) == 1 and "a receive into a buffer of 1 x float32 from rank 1 where " \
        "the method receives 0 x float32" in said[0], said
    assert "2 message" not in said[0]


def test_a_dtype_that_differs_is_not_told_as_a_size():
    from labs.harness.grading.compare import Method, differences
    from labs.harness.grading.ops import Op
    said = differences([Op("recv", "irecv", 1, 3, "float32")],
                       [Op("recv", "irecv", 1, 3, "bfloat16")], Method(why="the method"),
                       rank=0, world_size=2)
    assert said and "own dtype (bfloat16)" in said[0], said


def _aborted(recv_dtype, recv_numel, send_dtype, send_numel):
    from labs import WorkerError
    from labs.harness.ranks.tracing import Event
    room, sent = (recv_numel * (8 if recv_dtype == "int64" else 4),
                  send_numel * (8 if send_dtype == "int64" else 4))
    exc = WorkerError("rank 1 was killed by signal SIGABRT", ranks=[1],
                      causes={1: "was killed by signal SIGABRT"})
    exc.outputs = {1: f"[enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. {sent} "
                      f"vs {room}. Received data size doesn't match expected size."}
    exc.trace = [Event(1, "irecv", peer=0, numel=recv_numel, dtype=recv_dtype, seq=3),
                 Event(0, "isend", peer=1, numel=send_numel, dtype=send_dtype, seq=3)]
    return exc


def test_gloos_abort_advises_only_what_the_record_shows():
    """Issue 52 item 9: empty_like is advised where the dtypes differ, never to a body whose
    buffer has the message's dtype (receives posted in another order than the sends)."""
    from labs.harness.grading import gloo_said
    _, dtype = gloo_said.explained(_aborted("float32", 12, "int64", 12))
    assert "empty_like" in dtype and "The buffer is float32, the message int64" in dtype
    _, order = gloo_said.explained(_aborted("float32", 3, "float32", 12))
    assert "empty_like" not in order and "post receives in the order of the sends" in order


def test_a_case_label_is_said_once():
    """Issue 52 item 9: a problem whose text already names its case gets no second label."""
    from types import SimpleNamespace

    from labs.harness.grading.run import _checked_failure
    exc = SimpleNamespace(
        messages={0: "rank 0, case float32, shape (3,): is wrong\nrank 0 kept a buffer"},
        causes={0: "GradeFailure: ..."},
        statuses={0: SimpleNamespace(note="case float32, shape (3,)")})
    problems = _checked_failure(exc, 0, "ring_all_reduce", 2).problems
    assert [p.count("float32, shape (3,)") for p in problems] == [1, 1], problems
