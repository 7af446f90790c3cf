"""Lesson 11 (labs/jobs.py, labs/scripts/, labs/views/jobs.py): the jobs behave as the
notebook says, the hang is found in every rank, and no process outlives a cell or a kernel.

Each torchrun run costs a torch import per process (seconds on a loaded 2-core machine).
"""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import labs.jobs as lab
import labs.harness.commands.torchrun as runner
import labs.views.jobs as view
from labs import launch
from labs.harness.ranks.exercises import SOLUTIONS_ENV
from labs.harness.grading import GradeFailure
from tests.graders.test_jobs import check_ring_job, run_probe
from tests.procs import alive

pytestmark = pytest.mark.slow


def assert_nothing_left(pids=()):
    """No process of this test's jobs runs, and neither do `pids` (checked in /proc)."""
    deadline = time.monotonic() + 10
    while (view.leftovers() or any(alive(p) for p in pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert view.leftovers() == [], view.leftovers()
    assert not [p for p in pids if alive(p)]


def test_first_job_on_one_node_and_on_two():
    one = view.run_job("first_job.py", nproc=4)
    assert one.succeeded, one.summaries
    assert [r.stdout for r in one.ranks] == [
        f"rank {r} of 4 (local rank {r}): all_reduce sum 10, received {10 * ((r - 1) % 4)} "
        f"from rank {(r - 1) % 4}\n" for r in range(4)]
    two = view.run_two_nodes("first_job.py", nproc_per_node=2)
    assert two.succeeded and len(two.summaries) == 2, two.summaries
    assert [r.stdout.replace(f"local rank {r.rank % 2}", "L") for r in two.ranks] == \
        [r.stdout.replace(f"local rank {r.rank}", "L") for r in one.ranks]
    assert "--rdzv-endpoint=127.0.0.1:PORT" in two.commands[0]
    assert_nothing_left()


def test_ring_job_script_runs_the_solution_under_torchrun():
    run = view.run_job("ring_job.py", nproc=3, args=["--numel", "5"], env={SOLUTIONS_ENV: "1"})
    total = [float(3 * i + 30) for i in range(5)]
    assert [r.stdout for r in run.ranks] == [f"rank {r} result: {total}\n" for r in range(3)]


def test_ring_job_cell_says_what_is_missing_and_shows_the_reference(monkeypatch, capsys):
    monkeypatch.setenv(SOLUTIONS_ENV, "0")
    run = view.run_ring_job(nproc=2, numel=3)
    out = capsys.readouterr().out
    assert "Exercise `ring_job` (labs/jobs.py) is not solved yet" in out
    assert "make check" in out and run.succeeded
    assert "each rank printed the sum, once: True" in out


def test_the_hang_is_found_by_py_spy_in_every_rank_and_the_timeout_fires():
    # Notebook 11's 3-s timeout: py-spy must see all four ranks stuck within it, also on a
    # loaded machine, where one dump took 2-3 s (one dump, during which no rank ran, is the
    # check: torchrun.py's _stuck_stacks).
    hang = view.run_job("hung_job.py", 4, args=["--timeout", "3"], dump_when_stuck=True)
    where = {rank: stack.where() for rank, stack in hang.stacks.items()}
    assert sorted(where) == [0, 1, 2, 3]
    assert where[0].startswith("barrier  <-  main (hung_job.py:")
    assert where[1] == where[0]
    assert where[2].startswith("send  <-  swap_with (hung_job.py:") and where[3] == where[2]
    for rank in (2, 3):
        assert view.ending(hang.ranks[rank]) == \
            "RuntimeError: Timed out waiting 3000ms for send operation to complete"
    for rank in (0, 1):
        assert view.ending(hang.ranks[rank]).startswith("stopped after another rank failed")
    assert hang.returncodes == [1]
    assert_nothing_left([s.pid for s in hang.stacks.values()])


def test_monitored_barrier_names_the_missing_ranks_and_detail_logs_collectives_only():
    loud = view.run_job("hung_job.py", 4, env=view.DEBUG_ENV,
                        args=["--check", "monitored", "--check-timeout", "1", "--timeout", "30"])
    assert view.ending(loud.ranks[0]) == \
        "RuntimeError: [Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in 1000 ms"
    for r in loud.ranks:
        assert r.log_lines("The debug level is set to DETAIL")
        fingerprints = r.log_lines("Running collective")
        assert len(fingerprints) == 1 and "OpType=ALLGATHER" in fingerprints[0]
    for r in loud.ranks[2:]:
        assert not r.log_lines(r"\bsend\b|\brecv\b"), r.stderr


def test_a_job_stopped_at_its_deadline_leaves_nothing():
    """The hung job would wait 60 s; the cell's deadline stops it, and everything is gone."""
    run = view.run_job("hung_job.py", nproc=4, args=["--timeout", "60"], deadline_s=10)
    assert run.returncodes == [None] and not run.succeeded
    assert_nothing_left()


@pytest.mark.all_lane       # 10 s of waiting for the deadline: the same stop as above
def test_a_job_not_stuck_by_its_deadline_raises_and_leaves_nothing():
    """Asked for the stacks of a stuck job, a job still computing at the deadline raises
    TimeoutError, and everything is gone all the same."""
    with pytest.raises(TimeoutError):
        view.run_job("hung_job.py", 4, args=["--timeout", "60", "--compute", "30"],
                     deadline_s=10, dump_when_stuck=True)
    assert_nothing_left()


KERNEL = """
import sys, time
import labs.harness.commands.torchrun as runner
from pathlib import Path
args = ["--standalone", "--nproc-per-node=4", "labs/scripts/hung_job.py", "--timeout", "120"]
with runner._started([args], None, Path(sys.argv[1])) as nodes:
    while len(nodes[0].rank_pids()) < 4:
        time.sleep(0.1)
    print(" ".join(map(str, [nodes[0].proc.pid, *nodes[0].rank_pids().values()])), flush=True)
    time.sleep(600)
"""


def test_a_killed_kernel_takes_its_jobs_with_it(tmp_path):
    """SIGKILL the process that started a hung job: torchrun gets SIGTERM
    (PR_SET_PDEATHSIG) and stops its workers; nothing of the job survives."""
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pids = [int(p) for p in kernel.stdout.readline().split()]
        assert len(pids) == 5, "the job did not start"
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.wait()
        deadline = time.monotonic() + 20
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if alive(p)], "processes outlived the kernel"
    finally:
        for pid in runner._marked(f"{kernel.pid}-"):
            os.kill(pid, signal.SIGKILL)


# Bodies of ring_job the grader must fail (each lacks what the exercise teaches), and one
# right body in another style it must pass.

def _job(*, timeout=True, destroy_on_error=True, reduce=None):
    import datetime
    import torch
    import torch.distributed as dist
    import labs.ring
    from labs.harness.commands.cli import format_result

    def ring_job(numel=6, timeout_s=30.0):
        kwargs = {"timeout": datetime.timedelta(seconds=timeout_s)} if timeout else {}
        dist.init_process_group("gloo", **kwargs)
        try:
            tensor = torch.arange(numel, dtype=torch.float32) + 10 * dist.get_rank()
            (reduce or labs.ring.pass_along_all_reduce)(tensor)
            print(format_result(dist.get_rank(), tensor))
        except Exception:
            if destroy_on_error:
                dist.destroy_process_group()
            raise
        dist.destroy_process_group()
        return tensor
    return ring_job


def _all_reduce(tensor):
    import torch.distributed as dist
    dist.all_reduce(tensor)


ring_job_other_style = _job()
ring_job_with_all_reduce = _job(reduce=_all_reduce)
ring_job_default_timeout = _job(timeout=False)
ring_job_leaks_the_group_on_error = _job(destroy_on_error=False)

WRONG = {"ring_job_with_all_reduce": "the trace shows all_reduce",
         "ring_job_default_timeout": "expected timeout_s=9",
         "ring_job_leaks_the_group_on_error": "still initialised"}


def test_the_grader_fails_bodies_without_the_method_and_passes_another_style(tmp_path):
    here = "tests.lessons.test_jobs"
    names = ["ring_job_other_style", *WRONG]
    records = run_probe(tmp_path, *[f"{here}:{name}" for name in names])
    check_ring_job({rank: record[f"{here}:ring_job_other_style"]
                    for rank, record in records.items()})
    for name, message in WRONG.items():
        with pytest.raises(GradeFailure, match=message):
            check_ring_job({rank: record[f"{here}:{name}"] for rank, record in records.items()})


def test_work_objects_and_overlap_timing_report_what_the_notebook_prints(monkeypatch):
    monkeypatch.setenv(SOLUTIONS_ENV, "1")
    seen = launch(lab.work_objects, 3, quiet=True)
    assert seen[0]["isend"] == (False, True)
    assert all(s["all_reduce(async_op=True)"] == (True, True) and s["sum correct"] for s in seen)
    timing = launch(lab.overlap_timing, 2, args=(256, 256, 64, 5), quiet=True)[0]
    assert sorted(timing["seconds"]) == sorted(lab.VARIANTS)
    assert all(len(ts) == 5 and min(ts) > 0 for ts in timing["seconds"].values())
    assert all(timing["checks"].values()), timing["checks"]


DUMP = """Process 5902: /usr/bin/python -u labs/scripts/hung_job.py --timeout 4
Python v3.11.7 (/usr/bin/python3.11)

Thread 5902 (idle): "MainThread"
    send (torch/distributed/distributed_c10d.py:2753)
    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)
    swap_with (hung_job.py:34)
    main (hung_job.py:67)
    record.<locals>.wrap.<locals>.wrapper (torch/distributed/elastic/multiprocessing/errors/__in\
it__.py:367)
    <module> (hung_job.py:81)
Thread 5990 (idle): "Thread-1"
    wait (threading.py:320)
"""


def test_reading_a_dump_and_an_ending():
    stack = runner.Stack(2, 5902, DUMP, runner.main_thread_frames(DUMP))
    assert [f.function for f in stack.frames[:3]] == [
        "send", "_exception_logger.<locals>.wrapper", "swap_with"]
    assert len(stack.frames) == 6       # the other thread's frames are not the main thread's
    assert stack.where() == "send  <-  swap_with (hung_job.py:34)  <-  main (hung_job.py:67)"
    assert stack.in_distributed()
    timed_out = ("[rank3]: Traceback (most recent call last):\n[rank3]: RuntimeError: [/x/gloo/"
                 "transport/tcp/unbound_buffer.cc:129] Timed out waiting 4000ms for send "
                 "operation to complete\n")
    assert view.ending(view.RankOutput(3, "", timed_out)) == \
        "RuntimeError: Timed out waiting 4000ms for send operation to complete"
    assert view.ending(view.RankOutput(0, "", "")).startswith("stopped after another rank failed")


def test_sanitised_output_has_no_path_date_or_pid():
    raw = (f"Process 1538: {view.ROOT}/.venv/bin/python -u labs/scripts/hung_job.py --fr-dump "
           f"/tmp/p2p-fr-abc123 --timeout 3\nPython v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)\n"
           "  time      : 2026-11-30_19:34:20\n  exitcode  : 1 (pid: 1532)\n"
           "  error_file: /tmp/p2p-job-03j6vl_e/node0/ranks/8b062697-ff41-42d0-9b3e-0e3057973611_x/0\n"
           "  RuntimeError: [/__w/pytorch/third_party/gloo/pair.cc:553] closed [127.0.0.1]:38053\n"
           "[I1130 19:34:36.635488278 socket.cpp:785] (localhost, 33149)\n")
    text = view.sanitised(raw)
    assert str(view.ROOT) not in text and ".venv/bin/python -u labs/scripts/hung_job.py" in text
    for leftover in ("/tmp/", "/root/", "/__w/", "2026-", "1538", "1532", "38053", "33149",
                     "19:34"):
        assert leftover not in text, (leftover, text)
    assert "--fr-dump FR_DIR" in text and "pid: <pid>" in text
    assert "error_file: <log dir>/node0/" in text, text
    # a learner's temporary folder elsewhere (macOS: /var/folders/...) is the same log dir
    other = view.sanitised(raw.replace("/tmp/p2p-job-", "/var/folders/x1/T/p2p-job-"))
    assert other == text, (other, text)


def test_root_cause_read_from_torchrun_report():
    summary = ("Failures:\n[1]:\n  time      : 2026-11-30_19:34:21\n  host      : localhost\n"
               "  rank      : 1 (local_rank: 1)\n------\n"
               "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-30_19:34:20\n"
               "  host      : localhost\n  rank      : 3 (local_rank: 3)\n")
    run = lab_run = type("Run", (), {"summaries": [summary]})()
    times, named = view.failures(lab_run)
    assert named == 3 and times[1] - times[3] == 1 and run is lab_run


# A lesson's demo as torchrun runs it (RANK etc. set), for one rank, then how many of gloo's
# threads this process still runs: cli.main destroyed the group, so there should be none.
_DEMO_THEN_COUNT = """
from labs.harness.commands import cli
from labs.harness.commands.threads import thread_names
from labs.gradients import demo
cli.main(demo, argv=[])
print("gloo threads after cli.main:", sum("gloo" in n for n in thread_names()))
"""


def test_cli_main_frees_the_group_after_a_ddp_demo():
    """Lesson 06's demo trains with DDP, whose first construction imports torch._dynamo, and
    with it torch.distributed.nn (defaults `group=group.WORLD`, bound at import). cli.main
    imports it before joining, so destroy_process_group() really ends the group: no gloo
    thread is left to be torn down at interpreter shutdown, where one can abort the process
    (notebook 11, section 5). Without that import this prints 3 (checked)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), OMP_NUM_THREADS="1", **{SOLUTIONS_ENV: "1"})
    done = subprocess.run([sys.executable, "-c", _DEMO_THEN_COUNT], cwd=runner.ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["rank 0 result: 0.00e+00",
                                        "gloo threads after cli.main: 0"], done.stdout
