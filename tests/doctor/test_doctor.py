"""The point-to-point doctor on real torchrun jobs (labs/scripts/doctor/): every kind of
problem is reported with its rank(s), file:line and kind; correct scripts get no
diagnosis; a hang is stopped within its deadline and nothing is left running.

One doctor run per job in the session (tests/doctor/jobs.py), shared by every assertion on it.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from labs.doctor import CLEAN, Job, examine
from labs.doctor.__main__ import split
from labs.harness.commands.torchrun import ROOT, leftovers
from tests.doctor.jobs import DEADLINE, at, doctor

pytestmark = pytest.mark.slow


def finding(report, kind: str, ranks, *wheres: str):
    """The finding of `kind` on exactly `ranks` whose lines include `wheres`."""
    for f in report.by_kind(kind):
        lines = {w for _, w in f.where}
        if set(f.ranks) == set(ranks) and set(wheres) <= lines:
            return f
    raise AssertionError(f"no {kind} on ranks {sorted(ranks)} at {wheres}:\n{report.text()}")


def test_deadlock_is_stopped_and_its_cycle_named():
    report = doctor("head_to_head.py", 2)
    f = finding(report, "deadlock", {0, 1}, at("head_to_head.py", "dist.send(mine"))
    assert report.outcome.stopped == "stuck" and report.status == 1
    assert "NCCL, modelled, not run here" in report.text() and "04_deadlock" in f.lesson
    assert leftovers() == []


def test_the_readme_example_is_this_report():
    """The README shows this run's first entry: its file:line must be where the send is."""
    readme = (ROOT / "README.md").read_text()
    example = next(block for block in readme.split("```text\n")[1:]
                   if block.startswith("labs/scripts/doctor/head_to_head.py:"))
    header, where = example.splitlines()[:2]
    lines = doctor("head_to_head.py", 2).text().splitlines()
    assert header in lines and where in lines, (header, where)


def test_nccl_breaks_a_cycle_of_sends_at_most_never_one_of_receives():
    """NCCL may buffer a small send (head to head can pass there), never a receive."""
    sends = finding(doctor("head_to_head.py", 2), "deadlock", {0, 1})
    receives = finding(doctor("receive_first.py", 3), "deadlock", {0, 1, 2},
                       at("receive_first.py", "dist.recv(theirs"))
    assert "can pass for small messages" in sends.nccl
    assert "at every size: a receive waits for its send" in receives.nccl
    assert leftovers() == []


def test_gloo_timeout_ends_a_deadlock_that_is_still_named():
    report = doctor("head_to_head.py", 2, "2")
    f = finding(report, "deadlock", {0, 1}, at("head_to_head.py", "dist.send(mine"))
    assert not report.outcome.stopped and "gloo's timeout fired" in f.gloo
    assert "Timed out waiting 2000ms for send operation" in f.gloo


def test_a_call_that_raises():
    report = doctor("failing_call.py", 2)
    f = finding(report, "call_failed", {0}, at("failing_call.py", "dist.send"))
    assert "Tag must be nonnegative" in f.gloo and report.status == 1


@pytest.mark.all_lane
def test_a_hang_outside_any_call_ends_at_the_deadline():
    # make test-all only: it lasts its whole deadline, and no shorter deadline starts the job
    # reliably on 2 shared cores (start-up to every rank's init_process_group measured 6.6-12 s
    # lightly loaded, 26-29 s under heavy load; at 30 s it failed to start). make test proves
    # the deadline with one shorter than start-up (tests/doctor/test_exits.py, about 1.5 s).
    report = doctor("sleeper.py", 2, deadline=55.0)
    assert report.outcome.stopped == "deadline"
    assert "the doctor stopped the job at its deadline (55 s) after 1 communication call" \
        in report.text(), report.text()
    finding(report, "unmatched_recv", {0}, at("sleeper.py", "dist.recv"))
    assert report.status == 1 and leftovers() == []


@pytest.mark.rule("tag_mismatch", "hazard")
def test_tag_mismatch_and_unmatched_receive_not_a_deadlock():
    report = doctor("lone.py", 3)
    finding(report, "tag_mismatch", {0, 2}, at("lone.py", "tag=0"), at("lone.py", "tag=1"))
    finding(report, "unmatched_recv", {1}, at("lone.py", "dist.irecv"))
    assert "deadlock" not in report.kinds()


@pytest.mark.rule("unmatched_send", "hazard")
def test_self_send_and_receive():
    report = doctor("snippet1.py", 2)
    line = at("snippet1.py", "batch_isend_irecv")
    finding(report, "self", {0, 1}, line)
    finding(report, "unmatched_send", {0}, line)
    assert "unwaited" not in report.kinds()          # said once, as unmatched


def test_same_buffer_sent_and_received_with_a_barrier_for_a_wait():
    report = doctor("snippet2_ring.py", 4)
    post = at("snippet2_ring.py", "batch_isend_irecv")
    finding(report, "buffer_in_flight", {0, 1, 2, 3}, post)
    finding(report, "barrier_instead_of_wait", {0, 1, 2, 3}, post,
            at("snippet2_ring.py", "dist.barrier()"))


@pytest.mark.rule("unmatched_recv", "hazard")
@pytest.mark.rule("buffer_in_flight", "hazard")
@pytest.mark.rule("barrier_instead_of_wait", "hazard")
def test_all_to_all_snippet():
    report = doctor("snippet3_all_to_all.py", 3)
    post = at("snippet3_all_to_all.py", "batch_isend_irecv")
    finding(report, "unmatched_recv", {0, 1, 2}, post)
    finding(report, "buffer_in_flight", {0, 1, 2}, post, at("snippet3_all_to_all.py", "/="))
    finding(report, "buffer_in_flight", {0, 1, 2}, post, at("snippet3_all_to_all.py", "add_("))
    finding(report, "barrier_instead_of_wait", {0, 1, 2}, post)


@pytest.mark.rule("size_mismatch", "hazard")
@pytest.mark.rule("dtype_mismatch", "hazard")
def test_size_and_dtype_mismatches():
    report = doctor("mismatch.py", 2, "--abort")
    finding(report, "size_mismatch", {0, 1}, at("mismatch.py", "torch.ones(10)"),
            at("mismatch.py", "dist.recv(big"))
    finding(report, "dtype_mismatch", {0, 1}, at("mismatch.py", "torch.ones(4)"),
            at("mismatch.py", "dist.recv(other"))
    smaller = finding(report, "size_mismatch", {0, 1}, at("mismatch.py", "torch.ones(5)"))
    assert "SIGABRT" in smaller.gloo


@pytest.mark.rule("partly_waited", "hazard")
@pytest.mark.rule("unwaited", "hazard")
def test_waits_and_buffers_in_flight():
    report = doctor("waiting.py", 2)
    first = at("waiting.py", "reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, a")
    finding(report, "partly_waited", {0, 1}, first)
    finding(report, "one_work_per_batch", {0, 1}, first)
    finding(report, "buffer_in_flight", {0, 1}, at("waiting.py", "c.add_(1)"))
    finding(report, "buffer_in_flight", {0, 1}, at("waiting.py", "d.sum()"))
    finding(report, "unwaited", {0, 1}, at("waiting.py", "dist.isend(e"))


@pytest.mark.rule("nccl_first_batch", "hazard")
@pytest.mark.rule("any_source", "hazard")
def test_nccl_only_problems_are_predicted_and_labelled():
    report = doctor("nccl_only.py", 3)
    assert all(f.nccl_only for f in report.findings) and report.status == 1
    assert "the script asked for nccl; run on gloo" in report.text()
    finding(report, "nccl_first_batch", {0, 1}, at("nccl_only.py", "for w in dist.batch"))
    finding(report, "tags_ignored_on_nccl", {0, 1})
    finding(report, "any_source", {2}, at("nccl_only.py", "src=None"))
    assert "large_batch" not in report.kinds()    # no op count is a sourced NCCL limit


def test_the_tutorial_ring_only_warns_about_nccl_and_is_still_wrong():
    report = doctor("tutorial_ring.py", 2)
    finding(report, "ungrouped_exchange", {0, 1}, at("tutorial_ring.py", "isend(send_buff"))
    assert report.kinds() == {"ungrouped_exchange"}
    assert "rank 0 result: [3.0, 3.0, 3.0]" not in report.outputs[0].stdout


# all_to_all.py: the fixed twin of snippet3_all_to_all.py (test_all_to_all_snippet), and the
# nearest of an any-source receive's (every source named)
@pytest.mark.parametrize("script, nproc", [
    ("lesson_ring.py", 4), ("pipeline_1f1b.py", 4), ("ring_attention.py", 4),
    pytest.param("all_to_all.py", 3, marks=[pytest.mark.rule(kind, "fixed") for kind in (
        "unmatched_recv", "buffer_in_flight", "barrier_instead_of_wait", "any_source")])])
def test_correct_scripts_get_no_diagnosis(script, nproc):
    report = doctor(script, nproc)
    assert report.findings == [] and report.status == 0, report.text()
    assert CLEAN in report.text()


def _cli(tmp_path, *argv):
    return subprocess.run([sys.executable, "-m", "labs.doctor", "--out", str(tmp_path), *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE + 30)


def test_command_line_clean_run_saves_report_and_timeline(tmp_path):
    done = _cli(tmp_path, "--overhead", "--nproc-per-node", "2",
                "labs/scripts/doctor/exchange_ok.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert CLEAN in done.stdout and "the script asked for nccl" in done.stdout
    assert "record overhead while the script ran" in done.stdout
    assert "run again without it" in done.stdout            # --overhead: a second run
    assert (tmp_path / "exchange_ok.doctor.txt").read_text().startswith("$ python -m")
    assert (tmp_path / "exchange_ok.doctor.png").stat().st_size > 1000


def test_command_line_script_that_cannot_run_exits_2(tmp_path):
    done = _cli(tmp_path, "--nproc-per-node", "2", "labs/scripts/doctor/broken.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "KeyError" in done.stdout and "broken.py:6" in done.stdout


def test_options_are_split_at_the_script():
    own, torchrun_args, script, args = split(["--deadline", "20", "--overhead",
                                              "--nproc-per-node", "4", "x.py", "--steps", "2"])
    assert own["deadline"] == 20.0 and own["overhead"] and not own["py_spy"]
    assert torchrun_args == ["--nproc-per-node", "4"]
    assert script == "x.py" and args == ["--steps", "2"]


def test_a_rank_stopped_inside_a_call_still_has_it_on_its_record():
    """A peer's abort can end the job while a rank is inside a send (gloo already wrote the
    bytes that made the peer abort): the call's "call" event is on the record, with no
    "post", and that is where the rank sat."""
    from labs.doctor.events import Event
    from labs.doctor.ranks import read_rank
    op = dict(kind="send", name="send", api="send", peer=1, numel=5, dtype="float32",
              nbytes=20, where="mismatch.py:19")
    events = [Event(0, "start", 0.0, numel=2), Event(0, "call", 1.0, seq=0, **op),
              Event(0, "post", 1.1, seq=0, **op), Event(0, "call", 2.0, seq=1, **op)]
    run = read_rank(0, events)
    assert [(c.seq, c.returned) for c in run.calls] == [(0, True), (1, False)]
    assert run.calls[0].t_post == 1.0 and run.blocked() is run.calls[1]
    raised = read_rank(0, events + [Event(0, "raised", 2.5, seq=1, text="boom", **op)])
    assert [(c.seq, c.raised) for c in raised.calls] == [(0, ""), (1, "boom")]


MESH_ONCE = '''
"""Rank 0 fails as gloo's connectFullMesh does on a loaded machine, the first time only."""
import os, sys
import torch
import torch.distributed as dist

marker = sys.argv[1]
if os.environ["RANK"] == "0" and not os.path.exists(marker):
    open(marker, "w").close()
    raise RuntimeError("Gloo connectFullMesh failed with [gloo/transport/tcp/pair.cc:553] "
                       "Connection closed by peer [127.0.0.1]:3815")
dist.init_process_group("gloo")
t = torch.ones(3)
dist.all_reduce(t)
dist.destroy_process_group()
'''


def test_a_mesh_that_fails_to_connect_before_any_call_is_run_again(tmp_path):
    """gloo fails to connect its full mesh now and then on a loaded machine (pytorch#53270),
    before the script communicates: that says nothing about the script, so the doctor runs
    it once more; the second run is the report."""
    script = tmp_path / "mesh_once.py"
    script.write_text(MESH_ONCE)
    marker = tmp_path / "failed_once"
    report = examine(Job(str(script), [str(marker)], ["--nproc-per-node=2"],
                         deadline_s=DEADLINE))
    assert marker.exists(), "the first run failed as the mesh does"
    assert report.findings == [] and report.status == 0, report.text()
    assert not report.outcome.leftovers


EACH_ON_ITS_OWN = '''
"""Each rank fails on its own line: rank 0 at once, rank 1 half a second later."""
import time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    time.sleep(0.5)             # busy: torchrun stops the other ranks 0.1 s after a failure
dist.send(torch.ones(3), dst=dist.get_rank())          # to itself: raises on each rank
'''


def test_each_rank_is_reported_at_its_own_failure_not_where_torchrun_stopped_it(tmp_path):
    """A rank whose script failed waits (2 s at most) for its peers to end or block before it
    exits, so the report shows what each rank's script did, not which rank torchrun stopped
    first."""
    script = tmp_path / "each_on_its_own.py"
    script.write_text(EACH_ON_ITS_OWN)
    report = examine(Job(str(script), [], ["--nproc-per-node=2"], deadline_s=DEADLINE))
    assert "rank 0 raised ValueError, rank 1 raised ValueError" in report.text(), \
        report.text()
    self_sends = report.by_kind("self")
    assert [sorted(f.ranks) for f in self_sends] == [[0, 1]], report.text()
    assert not report.outcome.leftovers


def test_a_group_that_outlives_destroy_process_group_is_named():
    """After DDP, destroy_process_group() frees nothing (notebook 11, section 5): the doctor
    counts the group's gloo threads when it returns, on every rank. Imported first, nothing.
    (A Work still held keeps only gloo's transport thread: exchange_ok.py stays clean.)"""
    script = ROOT / "labs" / "scripts" / "leave_after_ddp.py"
    lines = script.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "dist.destroy_process_group()" in text)
    pinned = examine(Job(str(script), [], ["--nproc-per-node=2"], deadline_s=DEADLINE))
    f = finding(pinned, "group_outlives_destroy", {0, 1}, f"{script}:{line}")
    assert "the group's 2 gloo worker threads still run" in f.gloo and "11_your_own" in f.lesson
    assert "default arguments of 10 functions of torch.distributed.nn.functional" in f.gloo
    # a problem only where a rank did abort at shutdown in this run; else a note (exit 0)
    aborted = "did abort at shutdown in this run" in f.gloo
    level = "warning" if aborted else "note"
    assert f"leave_after_ddp.py:{line}: {level} [group_outlives_destroy]" in pinned.text()
    assert f.note is not aborted
    assert pinned.status == (1 if aborted else 0 if pinned.outcome.returncode == 0 else 2)
    assert "import torch.distributed.nn before init_process_group" in f.gloo
    first = examine(Job(str(script), ["--import-first"], ["--nproc-per-node=2"],
                        deadline_s=DEADLINE))
    assert "group_outlives_destroy" not in first.kinds(), first.text()
    assert leftovers() == []
