"""Calls made from the script's own threads are recorded like the main thread's (lesson 12,
section 6): a ring of blocking sends made from a helper thread is a deadlock named at the
thread's line, and its fixed twin, batched in the same thread, gets a clean bill with every
rank's calls in the record. Real torchrun jobs under the doctor."""
from __future__ import annotations

import pytest

from tests.doctor.jobs import CLEAN, SCRIPTS, at, doctor
from tests.doctor.sweeps import over_sizes

pytestmark = pytest.mark.slow


@pytest.mark.rule("deadlock", "hazard")
@pytest.mark.parametrize("nproc", over_sizes(2, 3))
def test_a_threads_ring_of_sends_is_a_deadlock_at_the_threads_line(nproc):
    script = SCRIPTS / "thread_ring.py"
    report = doctor(script, nproc)
    deadlocks = report.by_kind("deadlock")
    assert report.status == 1 and len(deadlocks) == 1, report.text()
    assert set(deadlocks[0].ranks) == set(range(nproc)), report.text()
    assert {w for _, w in deadlocks[0].where} == {at(script, "dist.send(mine")}, report.text()


@pytest.mark.rule("deadlock", "fixed")
@pytest.mark.parametrize("nproc", over_sizes(2, 3))
def test_the_same_exchange_batched_in_the_thread_is_clean_and_recorded(nproc):
    script = SCRIPTS / "thread_ring_batched.py"
    report = doctor(script, nproc)
    assert report.status == 0 and report.findings == [], report.text()
    assert report.text(timings=False).endswith(CLEAN), report.text()
    posted = at(script, "works = dist.batch_isend_irecv(")
    for rank, run in report.runs.items():
        kinds = sorted(c.kind for c in run.calls if c.p2p and c.where == posted)
        assert kinds == ["recv", "send"], (rank, [(c.kind, c.where) for c in run.calls])
