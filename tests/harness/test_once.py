"""labs/harness/once.py: a test session makes each costly run once (a doctor job, a claim),
whichever process asks first; a second asker waits for that run, never starts its own."""
from __future__ import annotations

import os
import subprocess
import sys

from labs.claims import Claim, ClaimResult, evaluate
from labs.harness.once import SESSION_ENV
from labs.harness.ranks.exercises import SOLUTIONS_ENV
from tests.course import ROOT

# A process that asks for the key "k": its run appends a line to runs.txt and takes a second,
# so two processes started together ask while the first is still running.
ASK = """
import sys, time
from pathlib import Path
from labs.harness.once import once
def run():
    with open(Path(sys.argv[1]) / "runs.txt", "a") as runs:
        runs.write("ran\\n")
    time.sleep(1.0)
    return {"result": 42}
print(once("test", ("k",), run))
"""


def test_two_processes_asking_at_once_get_one_run(tmp_path):
    env = {**os.environ, SESSION_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    askers = [subprocess.Popen([sys.executable, "-c", ASK, str(tmp_path)], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    said = [asker.communicate(timeout=60) for asker in askers]
    assert [out for out, _ in said] == ["{'result': 42}\n"] * 2, said
    assert (tmp_path / "runs.txt").read_text() == "ran\n"


def _counting_claim(module: str) -> tuple[Claim, list]:
    calls = []

    def run():
        calls.append(1)
        return ClaimResult(True, f"run {len(calls)}")
    run.__module__ = module
    return Claim("counted", "99", "a claim that counts its runs", run), calls


def test_a_course_claim_runs_once_per_session_and_per_stubs_state(tmp_path, monkeypatch):
    claim, calls = _counting_claim("labs.claims.p2p")
    monkeypatch.setenv(SESSION_ENV, str(tmp_path))
    monkeypatch.setenv(SOLUTIONS_ENV, "1")
    assert evaluate(claim) == evaluate(claim) == ClaimResult(True, "run 1")
    monkeypatch.setenv(SOLUTIONS_ENV, "0")          # the learner's state is another run
    assert evaluate(claim) == ClaimResult(True, "run 2")
    monkeypatch.delenv(SESSION_ENV)                 # no session: every check runs
    assert evaluate(claim) == ClaimResult(True, "run 3") and len(calls) == 3


def test_a_tests_own_claim_always_runs(tmp_path, monkeypatch):
    claim, calls = _counting_claim("tests.lessons.test_claims")
    monkeypatch.setenv(SESSION_ENV, str(tmp_path))
    assert evaluate(claim) != evaluate(claim) and len(calls) == 2
