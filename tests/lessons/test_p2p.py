"""Lesson 01 (labs/p2p.py): the demos behave as the notebook says."""
import torch

import labs.p2p as lab
import labs.views.p2p as view
from labs import launch


def several_demos(rank, world_size):
    """Several demos, one after the other, in one launch (each is complete in itself)."""
    return {"first_send": lab.first_send(rank, world_size),
            "nonblocking": lab.nonblocking_pair(rank, world_size),
            "touched": lab.touch_before_wait(rank, world_size),
            "fixed": lab.touch_before_wait(rank, world_size, True),
            "read_early": lab.read_before_wait(rank, world_size),
            "completion": lab.completion_on_gloo(rank, world_size, 0.05),
            "demo": lab.demo(rank, world_size)}


def test_demos_send_recv_work_and_buffer_ownership():
    results = launch(several_demos, 2, quiet=True)
    assert results[1]["first_send"].tolist() == [10.0, 11.0]
    out0, out1 = results.outputs[0], results.outputs[1]
    assert "isend returned; is_completed(): False" in out0
    assert "after wait, is_completed(): True" in out0
    # The change made after isend, before wait, is what rank 1 receives.
    assert results[1]["touched"].tolist() == [100.0] * 4
    assert results[1]["fixed"].tolist() == [1.0] * 4
    assert "before wait: [0.0, 0.0, 0.0, 0.0]" in out1 and "after wait:  [7.0" in out1
    # On gloo a point-to-point Work says it is completed only once wait() has run, even
    # with the data delivered: polling saw False every time, then True after wait().
    assert results[0]["completion"] == {"isend": (False, True)}
    assert results[1]["completion"] == {"irecv": (False, True), "arrived": True}
    assert [r["demo"] for r in results] == ["got 1 from rank 1", "got 0 from rank 0"]


def test_gloo_send_waits_for_the_recv():
    results = launch(lab.rendezvous_send, 2, args=(0.2,), quiet=True)
    send_post, send_done, recv_post, recv_done = view.send_timing(results.trace)
    # Causality, not speed: the blocking send cannot return before the recv exists.
    assert recv_post <= send_done


def test_rendezvous_explorer_shows_the_plot_and_nothing_else(capsys):
    # interact() prints whatever its function returns: the button's function returns None.
    assert view._plot_only(0.0) is None
    out = capsys.readouterr().out
    assert out.startswith("receiver delay 0 s: the send returned after the recv was posted: True")
    assert "None" not in out


def test_any_source():
    world_size = 4
    results = launch(lab.any_source, world_size, quiet=True)
    got = results[0]
    for call in ("recv", "irecv"):
        senders = sorted(s for c, s, _ in got if c == call)
        assert senders == list(range(1, world_size)), (call, got)
    assert all(value == 10.0 * sender for _, sender, value in got)
    assert "source_rank API is being deprecated" in results.outputs[0]


def exercise_runners(rank, world_size):
    return lab.token_ring_run(rank, world_size), lab.ping_pong_run(rank, world_size, 2, 4)


def test_exercise_runners_use_the_solution(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    results = launch(exercise_runners, 3, quiet=True)
    assert [tokens for tokens, _ in results] == [103.0, 101.0, 103.0]
    start, replies, seconds = results[0][1]
    assert len(replies) == len(seconds) == 2 and torch.equal(replies[1], start + 2)
    assert results[2][1] is None


def test_start_skew_reads_each_rank_s_first_call_and_rank_0_s_wait(capsys):
    results = launch(lab.token_ring_run, 4, args=(100,), quiet=True, env={"P2P_COURSE_SOLUTIONS": "1"})
    view.start_skew(results.trace)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" posted")[0] for line in lines[:4]] == [f"rank {r}" for r in range(4)]
    assert lines[4].startswith("rank 0's recv waited ") and lines[4].endswith(
        "before the last rank had started")
