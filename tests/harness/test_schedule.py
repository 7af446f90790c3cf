"""The schedule checker (labs/harness/schedule/) against real gloo runs, and the timelines
(labs/harness/notebook/plots.py).

Every schedule below is checked twice: `check` predicts its outcome without a worker,
then `execute` runs it on real gloo workers; the prediction must equal what really
happened (and the hard-coded expectation, so that both cannot drift together). Hangs use
2 s launches (`labs.harness.schedule.HANG_TIMEOUT`), run one after the other.
"""
import subprocess
import sys

import matplotlib.pyplot as plt
import pytest
import torch

from labs import launch
from labs.harness import schedule as sc
from labs.harness.notebook.plots import describe_moment, match_pairs, moments, scrub, summary, timeline
from labs.harness.schedule import (barrier, batch, check, compute, execute, from_trace, irecv,
                                   isend, recv, send, wait)
from labs.harness.schedule.drawing import draw, step_through
from labs.harness.ranks.tracing import Event


def _early_wait(peer):
    h = isend(peer, 10)
    return [h, wait(h), recv(peer, 10)]


def _wait_twice():
    h = irecv(0, 3)
    return [h, wait(h), wait(h)]


# name -> (schedule, expected outcome on gloo, verdict kinds that must be reported)
SCHEDULES = {
    "head_to_head_send": ({0: [send(1, 10), recv(1, 10)],
                           1: [send(0, 10), recv(0, 10)]}, "hang", {"deadlock"}),
    "head_to_head_recv": ({0: [recv(1, 10), send(1, 10)],
                           1: [recv(0, 10), send(0, 10)]}, "hang", {"deadlock"}),
    "batched_fix": ({r: [batch([isend(1 - r, 10), irecv(1 - r, 10)]), wait()]
                     for r in (0, 1)}, "ok", set()),
    "parity_fix": ({0: [send(1, 10), recv(1, 10)],
                    1: [recv(0, 10), send(0, 10)]}, "ok", set()),
    "ring3_blocking": ({r: [send((r + 1) % 3, 10), recv((r - 1) % 3, 10)] for r in range(3)},
                       "hang", {"deadlock"}),
    "ring4_batch": (sc.ring_shift_schedule(4, numel=6), "ok", set()),
    "early_wait": ({0: _early_wait(1), 1: _early_wait(0)}, "hang", {"deadlock"}),
    "unmatched_send": ({0: [send(1, 10)], 1: []}, "hang", {"unmatched_send"}),
    "unmatched_recv": ({0: [], 1: [recv(0, 10)]}, "hang", {"unmatched_recv"}),
    "lost_isend": ({0: [isend(1, 10)], 1: []}, "silent", {"unmatched_send"}),
    "self_send": ({0: [send(0, 10)], 1: []}, "error", {"self"}),
    "self_batch": ({0: [batch([isend(0, 4), irecv(0, 4)]), wait()], 1: []}, "error",
                   {"self"}),
    "tag_mismatch": ({0: [send(1, 10, tag=1)], 1: [recv(0, 10, tag=2)]}, "hang",
                     {"tag_mismatch"}),
    "tag_order_cycle": ({0: [send(1, 10, tag=1), send(1, 10, tag=0)],
                         1: [recv(0, 10, tag=0), recv(0, 10, tag=1)]}, "hang", {"deadlock"}),
    "larger_recv_prefix": ({0: [send(1, 10)], 1: [recv(0, 20)]}, "silent",
                           {"size_mismatch"}),
    "float32_into_float64": ({0: [send(1, 10)], 1: [recv(0, 10, "float64")]}, "silent",
                             {"size_mismatch"}),
    "same_bytes_dtype": ({0: [send(1, 10)], 1: [recv(0, 10, "int32")]}, "silent",
                         {"dtype_mismatch"}),
    "smaller_recv_abort": ({0: [send(1, 20)], 1: [recv(0, 10)]}, "abort", {"size_mismatch"}),
    "fifo_messages": ({0: [isend(1, 4), isend(1, 8), send(1, 2, tag=5), wait()],
                       1: [recv(0, 2, tag=5), recv(0, 4), recv(0, 8)]}, "ok", set()),
    "any_source": ({0: [recv(None, 3), recv(None, 3)], 1: [send(0, 3)], 2: [send(0, 3)]},
                   "ok", {"any_source_race"}),
    "wait_twice": ({0: [send(1, 3)], 1: _wait_twice()}, "hang", {"double_wait"}),
    "barrier_then_send": ({0: [barrier(), send(1, 4)], 1: [recv(0, 4), barrier()]}, "hang",
                          {"deadlock"}),
    "overlap_with_compute": ({r: [batch([isend((r + 1) % 3, 1000), irecv((r - 1) % 3, 1000)]),
                                  compute("work", 0.01), wait()] for r in range(3)},
                             "ok", set()),
}


# ----------------------------------------------------------------------------------------
# Predictions alone (no workers)
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SCHEDULES))
def test_prediction(name):
    schedule, expected, kinds = SCHEDULES[name]
    report = check(schedule)
    assert report.outcome == expected, f"{name}: {report}"
    assert kinds <= report.kinds, f"{name}: expected {kinds}, got {report.kinds}\n{report}"
    if expected == "ok":
        assert not [v for v in report.verdicts if v.outcome != "warning"], str(report)


def test_deadlock_names_the_cycle():
    report = check(SCHEDULES["head_to_head_send"][0])
    assert report.cycles == [(0, 1)]
    assert "rank 0 waits in send->1 while rank 1 waits in send->0" in str(report)
    assert report.stuck == {0: "send(1, 10)", 1: "send(0, 10)"}
    ring = check(SCHEDULES["ring3_blocking"][0])
    assert ring.cycles == [(0, 1, 2)]
    assert ring.by_kind("deadlock")[0].message.startswith(
        "rank 0 waits in send->1 while rank 1 waits in send->2 while rank 2 waits in send->0.")
    early = check(SCHEDULES["early_wait"][0])
    assert early.by_kind("deadlock")[0].message.startswith(
        "rank 0 waits in wait(isend->1) while rank 1 waits in wait(isend->0).")
    # A rank stuck behind a cycle is not part of it.
    behind = check({0: [send(1, 4), recv(1, 4)], 1: [send(0, 4), recv(0, 4)],
                    2: [recv(0, 4, tag=7)]})
    assert behind.cycles == [(0, 1)] and "unmatched_recv" in behind.kinds


def test_matching_is_fifo_per_source_destination_tag():
    report = check(SCHEDULES["fifo_messages"][0])
    got = [(s.rank, s.index, q.rank, q.index) for s, q in report.pairs]
    assert got == [(0, 0, 1, 1), (0, 1, 1, 2), (0, 2, 1, 0)]


def test_buffer_mismatches_say_what_gloo_does():
    prefix = check(SCHEDULES["larger_recv_prefix"][0]).by_kind("size_mismatch")[0]
    assert prefix.outcome == "silent" and "first 40 bytes = 10 elements" in prefix.message
    abort = check(SCHEDULES["smaller_recv_abort"][0]).by_kind("size_mismatch")[0]
    assert abort.outcome == "abort" and "SIGABRT" in abort.message
    retyped = check(SCHEDULES["same_bytes_dtype"][0]).by_kind("dtype_mismatch")[0]
    assert "reinterpreted as int32" in retyped.message


def test_nccl_differences():
    tag = check(SCHEDULES["tag_mismatch"][0])
    assert tag.nccl.outcome == "ok" and "ignores tags" in tag.by_kind("tag_mismatch")[0].nccl
    cycle = check(SCHEDULES["tag_order_cycle"][0])
    assert cycle.nccl.outcome == "ok" and "no such cycle on NCCL" in str(cycle)
    selfb = check(SCHEDULES["self_batch"][0])
    # NCCL allows send/recv to self, but a batch that is the first call on the group without
    # every rank is undefined there (the batch_isend_irecv docstring)
    assert selfb.nccl.outcome == "undefined" and "NCCL allows" in str(selfb)
    lone = check(SCHEDULES["self_send"][0])
    assert lone.nccl.outcome == "error" and "ncclInvalidUsage" in str(lone.nccl.verdicts[0])
    h2h = check(SCHEDULES["head_to_head_send"][0])
    assert h2h.nccl.outcome == "hang" and "may buffer a small send" in str(h2h)
    recvs = check(SCHEDULES["head_to_head_recv"][0])
    assert "may buffer" not in recvs.by_kind("deadlock")[0].nccl
    anysrc = check(SCHEDULES["any_source"][0])
    assert anysrc.nccl.outcome == "error" and "any_source" in anysrc.nccl.kinds
    fifo = check(SCHEDULES["fifo_messages"][0])       # tags ignored: FIFO pairs change
    assert fifo.nccl.outcome == "undefined"


def test_nccl_self_ops_need_their_partner_in_the_same_call():
    """NCCL (modelled): a self send without its self receive in the same group raises
    (ncclInvalidUsage), it does not hang; a matched pair in one batch is allowed."""
    snippet1 = {r: [batch([isend(1, 5), irecv(0, 3)]), wait()] for r in (0, 1)}
    nccl = check(snippet1, backend="nccl")
    assert nccl.outcome == "error" and not nccl.stuck
    assert {v.ranks for v in nccl.by_kind("self")} == {(0,), (1,)}
    assert all("ncclInvalidUsage" in v.message for v in nccl.by_kind("self"))
    pair = {0: [batch([isend(0, 4), irecv(0, 4), isend(1, 4)]), wait()],
            1: [batch([irecv(0, 4)]), wait()]}
    assert check(pair, backend="nccl").outcome == "ok"
    split = {0: [batch([isend(0, 4)]), batch([irecv(0, 4)]), wait()], 1: []}
    assert check(split, backend="nccl").outcome == "error"


def test_unreached_problems_are_reported_as_such():
    report = check({0: [send(1, 4), recv(1, 4), send(1, 8)],
                    1: [send(0, 4), recv(0, 4), recv(0, 4)]})
    assert report.outcome == "hang"
    size = report.by_kind("size_mismatch")[0]
    assert size.outcome == "abort" and not size.reached


def test_schedule_language_rejects_mistakes():
    with pytest.raises(ValueError, match="destination"):
        send(None, 4)
    with pytest.raises(ValueError, match="isend/irecv"):
        batch([send(1, 4)])
    with pytest.raises(ValueError, match="empty"):
        batch([])
    with pytest.raises(ValueError, match="dtype"):
        send(1, 4, dtype="float8")
    with pytest.raises(ValueError, match="tag"):
        send(1, 4, tag=-1)
    with pytest.raises(ValueError, match="has not posted"):
        check({0: [wait(isend(1, 4))], 1: []})
    with pytest.raises(ValueError, match="at least 2 ranks"):
        check({0: [send(1, 4)]})
    assert "bad_peer" in check({0: [send(3, 4)], 1: []}).kinds
    h = isend(1, 4)
    assert str(sc.Schedule({0: [h, wait(h)], 1: [recv(0, 4)]})).splitlines()[0] == \
        "  rank 0: h0 = isend(1, 4); wait(h0)"


# ----------------------------------------------------------------------------------------
# Predictions against real gloo runs
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SCHEDULES))
def test_real_run_matches_prediction(name, no_leftover_workers):
    schedule, expected, _ = SCHEDULES[name]
    report = check(schedule)
    real = execute(schedule)
    assert (report.outcome, real.kind) == (expected, expected), f"{name}:\n{report}\n\n{real}"
    if real.kind in ("ok", "silent"):
        predicted = {q.id: s.id for s, q in report.pairs}
        if "any_source_race" in report.kinds:   # which buffer gets which message: timing
            assert sorted(real.pairs.values()) == sorted(predicted.values())
        else:
            assert real.pairs == predicted, f"{name}: real {real.pairs}, predicted {predicted}"
    if real.kind == "ok":
        assert from_trace(real.trace) == sc.Schedule(schedule), \
            f"{name}: recorded\n{sc.Schedule(from_trace(real.trace))}"
    if name == "head_to_head_send":
        assert real.detail.splitlines() == ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                                            "rank 1: blocked in send(to 0, tag 0, 10 x float32)"]
    if name == "unmatched_recv":
        assert real.detail.splitlines()[0] == \
            "rank 0: finished its calls, waiting for the other ranks"
    if name == "smaller_recv_abort":
        assert "rank 1: was killed by signal SIGABRT" in real.detail
    if name == "larger_recv_prefix":
        buf = real.received[1]
        assert torch.equal(buf[:10], sc.payload(real.schedule.ops[0])) and not buf[10:].any()


def test_worker_side_loads_no_plotting():
    """Workers import the checker to run a schedule: that must not import matplotlib or
    ipywidgets (seconds per launch); the drawing lives in its own module."""
    code = ("import sys, labs.harness.schedule; "
            "print(sorted({'matplotlib', 'ipywidgets'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]", out


def test_demo_ring_delivers_each_neighbours_payload():
    results = launch(sc.demo, 3, quiet=True)
    sched = sc.Schedule(sc.ring_shift_schedule(3))
    for rank, got in enumerate(results):
        sender = next(p for p in sched.ops if p.send and p.peer == rank)
        assert got == [sc.payload(sender).tolist()]


# ----------------------------------------------------------------------------------------
# Pictures
# ----------------------------------------------------------------------------------------

def _trace():
    ev = [Event(0, "isend", 1, 0, 10, "float32", 0.000, 0.004, batch=0, blocking=False),
          Event(0, "irecv", 1, 0, 10, "float32", 0.001, 0.005, batch=0, blocking=False),
          Event(0, "compute", t_post=0.001, t_done=0.003, label="work"),
          Event(0, "wait", 1, 0, 10, "float32", 0.003, 0.005, batch=0,
                label="isend(to 1, tag 0, 10 x float32, in batch #0)"),
          Event(1, "recv", 0, 0, 10, "float32", 0.002, 0.004),
          Event(1, "send", 0, 0, 10, "float32", 0.004, 0.005),
          Event(1, "recv", 0, 3, 4, "float32", 0.005, None, error="RuntimeError: timed out",
                t_error=0.006)]
    return ev


def test_from_trace_reads_batches_waits_and_double_waits():
    # A wait names the op it waits for by that op's `seq` (its position in the rank's list).
    ev = [Event(0, "isend", 1, 0, 3, "float32", 0.0, 0.002, batch=0, blocking=False, seq=0),
          Event(0, "irecv", 1, 0, 3, "float32", 0.0, 0.003, batch=0, blocking=False, seq=1),
          Event(0, "wait", 1, 0, 3, "float32", 0.001, 0.003, batch=0,
                label="irecv(from 1, tag 0, 3 x float32, in batch #0)", seq=2, waits_for=1),
          Event(0, "compute", t_post=0.003, t_done=0.004, label="work", seq=3),
          Event(0, "wait", 1, 0, 3, "float32", 0.004, 0.004, batch=0,
                label="isend(to 1, tag 0, 3 x float32, in batch #0)", seq=4, waits_for=0),
          Event(0, "barrier", t_post=0.005, t_done=0.006, seq=5),
          Event(1, "irecv", 0, 0, 3, "float32", 0.0, 0.002, blocking=False, seq=0),
          Event(1, "send", 0, 0, 3, "float32", 0.0, 0.003, seq=1),
          Event(1, "wait", 0, 0, 3, "float32", 0.001, 0.002,
                label="irecv(from 0, tag 0, 3 x float32)", seq=2, waits_for=0),
          Event(1, "wait", 0, 0, 3, "float32", 0.003, None,
                label="irecv(from 0, tag 0, 3 x float32)", error="RuntimeError: timed out",
                seq=3, waits_for=0),
          Event(1, "barrier", t_post=0.005, t_done=0.006, seq=4)]
    got = from_trace(ev)
    b = batch([isend(1, 3), irecv(1, 3)])
    h = irecv(0, 3)
    expected = {0: [b, wait(b.ops[1]), compute("work"), wait(b.ops[0]), barrier()],
                1: [h, send(0, 3), wait(h), wait(h), barrier()]}
    assert sc.Schedule(got) == sc.Schedule(expected), str(sc.Schedule(got))
    assert check(got).kinds >= {"double_wait"}


def test_timeline_is_backward_compatible_and_draws_every_call():
    events = _trace()
    fig, ax = plt.subplots()
    assert timeline(events, title="t", ax=ax) is ax
    assert len(ax.patches) == len(events)          # one bar per call
    assert ax.get_title(loc="left") == "t"
    assert sorted((s.rank, r.rank) for s, r in match_pairs(events)) == [(0, 1), (1, 0)]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "never completed" in labels and "isend in flight" in labels
    plt.close("all")
    ax = timeline(events, upto=0.0025)             # only what had happened by then
    assert len(ax.patches) == 4
    plt.close("all")


def test_scrubber_steps_through_the_run():
    events = _trace()
    steps = moments(events)
    assert len(steps) == 2 * len(events) - 1       # every post, every completion
    assert [m[0] for m in steps] == sorted(m[0] for m in steps)
    assert describe_moment(steps[0]) == \
        "t = 0.000 ms: rank 0 posts isend(to 1, tag 0, 10 x float32, in batch #0)"
    widget = scrub(events)
    slider = widget.children[0].children[1]
    assert slider.description == "step" and slider.max == len(steps) - 1
    slider.value = 5
    plt.close("all")
    assert summary(events).endswith("recv(from 0, tag 3, 4 x float32) [never completed]")


def test_draw_marks_the_cycle_and_the_pairs():
    schedule = SCHEDULES["ring3_blocking"][0]
    report = check(schedule)
    ax = draw(schedule, report)
    red = [p for p in ax.patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)]
    assert len(red) == 3                           # the three sends of the cycle
    assert "deadlock (ranks 0, 1, 2)" in ax.get_title(loc="left")
    plt.close("all")
    ok = SCHEDULES["fifo_messages"][0]
    ax = draw(ok, upto=3)
    assert ax.get_title(loc="left").startswith("step 3: rank 0 calls send(1, 2, tag=5)")
    widget = step_through(ok)
    assert widget.children[0].max == len(check(ok).steps) - 1
    plt.close("all")
