"""The test session runs each doctor job once (tests/doctor/jobs.py, labs/harness/once.py):
two processes asking for the same job at once, as two xdist workers do, get one run's report."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from labs.harness.commands.torchrun import ROOT
from labs.harness.once import SESSION_ENV

pytestmark = pytest.mark.slow

# A worker: the report on exchange_ok.py at 2 ranks, said by the first event's time stamp
# (one per run: a second run has its own)
ASK = """
from tests.doctor.jobs import report_of
from labs.harness.commands.torchrun import ROOT
report = report_of(ROOT / "labs/scripts/doctor/exchange_ok.py", 2)
print(report.status, report.outcome.events[0][0].t)
"""


def test_every_worker_of_the_session_shares_its_folder_of_reports():
    """conftest.py makes the folder before xdist starts its workers: they inherit it."""
    assert os.path.isdir(os.environ[SESSION_ENV])


def test_two_workers_asking_for_one_job_at_once_get_one_run(tmp_path):
    env = {**os.environ, SESSION_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    workers = [subprocess.Popen([sys.executable, "-c", ASK], cwd=ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in range(2)]
    said = [worker.communicate(timeout=180) for worker in workers]
    assert all(w.returncode == 0 for w in workers), said
    first, second = (out.split() for out, _ in said)
    assert first == second and first[0] == "0", said
    assert len(list(tmp_path.glob("*.pickle"))) == 1
