"""How a doctor run ends, said as it happened (labs/doctor/exits.py, __main__.py): the script's
own error after a clean exchange, argparse refusing the script's command line, a job stopped
at its deadline (after how many calls, or while it was still starting), a group made and never
used (not a clean bill), what the ranks printed, and Ctrl-C (one line, exit 130, nothing left).
Each on real torchrun jobs, both ways: the hazard and its fixed twin."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from labs.doctor import CLEAN
from labs.doctor.__main__ import INTERRUPTED
from labs.harness.commands.torchrun import ROOT, _marked, leftovers
from tests.doctor.jobs import DEADLINE, doctor, line_of

pytestmark = pytest.mark.slow


def cli(*argv, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "labs.doctor", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=DEADLINE + 30)


def test_the_scripts_own_error_after_a_clean_exchange_is_said_so():
    script = "asserts_after_exchange.py"
    wrong = doctor(script, 3, "--wrong-check")
    assert wrong.status == 2 and wrong.findings == [], wrong.text()
    where = f"labs/scripts/doctor/{script}:{line_of(script, 'assert theirs')}"
    assert f"the script raised: rank 0: {where}: AssertionError: rank 0 got 2.0, expected 1" \
        in wrong.text(), wrong.text()
    assert wrong.verdict() == ("the script raised its own error after 6 communication calls "
                               "(see above): in what ran, no problems found on gloo; none "
                               "predicted on NCCL")
    assert "could not run" not in wrong.text()
    right = doctor(script, 3)
    assert right.status == 0 and right.verdict() == CLEAN, right.text()


def test_argparse_refusing_the_scripts_command_line_is_said_in_argparse_words():
    script = "argparse_required.py"
    refused = cli("--nproc-per-node", "2", f"labs/scripts/doctor/{script}")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    where = f"labs/scripts/doctor/{script}:{line_of(script, 'parse_args()')}"
    assert (f"argparse refused the script's command line: ranks 0, 1: {where}: {script}: error: "
            f"the following arguments are required: --steps (usage: {script} [-h] --steps "
            f"STEPS)") in refused.stdout, refused.stdout
    assert "the job failed: rank 0 exited with status 2, rank 1 exited with status 2" \
        in refused.stdout and "SystemExit" not in refused.stdout
    assert "argparse refused the script's command line (see above): nothing checked" \
        in refused.stdout


def test_what_the_ranks_printed_is_shown_and_the_rest_saved_with_out(tmp_path):
    """The fixed twin of the refused command line: --steps given."""
    done = cli("--out", str(tmp_path), "--nproc-per-node", "2",
               "labs/scripts/doctor/argparse_required.py", "--steps", "25")
    assert done.returncode == 0 and CLEAN in done.stdout, done.stdout + done.stderr
    saved = tmp_path / "argparse_required.ranks.txt"
    lines = done.stdout.splitlines()
    assert (f"what the ranks printed (stdout, rank order); earlier lines not shown (rank 0: 15, "
            f"rank 1: 15): saved in {saved}:") in lines, done.stdout
    shown = [line for line in lines if line.startswith("    [rank ")]
    assert shown[0] == "    [rank 0] rank 0 step 15: holds the block of rank 0"
    assert shown[-1] == "    [rank 1] rank 1 step 24: holds the block of rank 0"
    assert len(shown) == 20
    assert f"stderr, lines written (rank 0: 1): saved in {saved}" in lines   # no doctor noise
    whole = saved.read_text()
    assert whole.count("step ") == 50 and "rank 0: starting" in whole
    assert (tmp_path / "argparse_required.doctor.txt").read_text().count("    [rank ") == 20


def test_a_group_made_and_never_used_is_not_a_clean_bill():
    unused = doctor("joins_and_leaves.py", 2)
    assert unused.status == 2 and unused.verdict() == ("the script made a process group but "
                                                       "never communicated through it: nothing "
                                                       "to check"), unused.text()
    met = doctor("joins_and_leaves.py", 2, "--barrier")
    assert met.status == 0 and met.verdict() == CLEAN, met.text()


@pytest.mark.rule("exit_2", "hazard")
def test_a_deadline_shorter_than_start_up_says_so():
    """7 s leaves the job 1 s before stopping begins: torchrun alone takes longer to start
    (the command line refuses a --deadline under 15 s; Python's API does not)."""
    report = doctor("exchange_ok.py", 2, deadline=7.0)
    assert report.outcome.stopped == "deadline" and report.status == 2, report.text()
    assert "the doctor stopped the job at its deadline (7 s) while the job was starting: " \
        in report.text() and "of 2 ranks had made the process group" in report.text()
    assert report.verdict() == ("stopped at the deadline before any communication call: "
                                "nothing checked (give a longer --deadline)")
    assert "no process group was created" not in report.text()


@pytest.mark.all_lane
def test_a_job_stopped_at_its_deadline_says_after_how_many_calls():
    """make test-all only: it lasts its whole deadline, which must cover start-up under load
    (30 s did not, once: 'while the job was starting: 0 of 2 ranks')."""
    stopped = doctor("long_compute.py", 2, deadline=55.0)
    assert stopped.outcome.stopped == "deadline" and stopped.status == 2, stopped.text()
    assert "the doctor stopped the job at its deadline (55 s) after 4 communication calls" \
        in stopped.text()
    assert stopped.verdict() == ("stopped at the deadline after 4 communication calls: in "
                                 "what ran, no problems found on gloo; none predicted on "
                                 "NCCL; the rest was not checked")
    ended = doctor("long_compute.py", 2, "--seconds", "0")
    assert ended.status == 0 and ended.verdict() == CLEAN, ended.text()


@pytest.mark.rule("exit_130", "hazard")
def test_ctrl_c_stops_the_job_in_one_line_with_exit_130():
    """SIGINT to the doctor's process group, as a terminal's Ctrl-C sends it, while the job
    runs (sleeper.py hangs until the deadline): one line, exit 130, no process left."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    doctor_proc = subprocess.Popen(
        [sys.executable, "-m", "labs.doctor", "--deadline", "120", "--nproc-per-node", "2",
         "labs/scripts/doctor/sleeper.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        until = time.monotonic() + 90
        while len(_marked(f"{doctor_proc.pid}-")) < 3 and time.monotonic() < until:
            time.sleep(0.2)                 # torchrun and its 2 ranks
        job = _marked(f"{doctor_proc.pid}-")
        assert len(job) >= 3, "the job did not start"
        os.killpg(doctor_proc.pid, signal.SIGINT)
        out, err = doctor_proc.communicate(timeout=30)
    finally:
        if doctor_proc.poll() is None:
            doctor_proc.kill()
    assert doctor_proc.returncode == 130, (out, err)
    assert err == INTERRUPTED + "\n" and out == "", (out, err)
    assert _marked(f"{doctor_proc.pid}-") == [] and leftovers() == []
