"""A body stuck outside torch.distributed, asleep or in a loop that computes, is told
within 10 s while graded, at its line: grade() passes launch's idle_after (IDLE_SECONDS for
a sleep; SPIN_CPU_SECONDS of CPU for a loop)."""
import inspect
import re
import time

import pytest
import torch

from labs.harness.grading.run import GradeFailure, grade
from labs.harness.launch.spec import IDLE_SECONDS, SPIN_CPU_SECONDS
from tests.harness import idle_bodies as report_idle

pytestmark = pytest.mark.slow


def graded_body(rank, world_size, name):
    """What a grader does with a body (the worker, in its own file, as a grader's is): call
    it on the rank's data."""
    return getattr(report_idle, name)(torch.full((4,), float(rank)))


def _line(fn, text: str) -> str:
    lines, first = inspect.getsourcelines(fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"tests/harness/idle_bodies.py:{first + offset}"


# Both ranks sit at the same line; the first one told is named, and which one that is
# depends on which left the exchange first (rank 1 in one CI run).
TOLD = {"exchange_then_sleeps": r"Rank [01] has been asleep outside torch.distributed for \d+ s "
                                r"at {here} \(a sleep or a wait of its own that never ends\?\)",
        "exchange_then_spins": r"Rank [01] has computed for [\d.]+ CPU-seconds outside "
                               r"torch.distributed at {here}, with nothing posted or completed "
                               r"\(a loop that never ends\?"}


@pytest.mark.parametrize("body, at", [("exchange_then_sleeps", "time.sleep"),
                                      ("exchange_then_spins", "total +=")])
def test_a_body_stuck_outside_torch_distributed_is_told_in_seconds_at_its_line(
        no_leftover_workers, body, at):
    grade(graded_body, 2, args=("_swap",))      # the fork server is up
    started = time.perf_counter()
    with pytest.raises(GradeFailure) as info:
        grade(graded_body, 2, args=(body,), what=body)
    took = time.perf_counter() - started
    message, here = str(info.value), _line(getattr(report_idle, body), at)
    assert message.startswith(f"{body} hung (world_size=2): {here}: rank 0 not inside a "
                              f"torch.distributed call"), message
    assert re.search(TOLD[body].format(here=re.escape(here)), message), message
    if body == "exchange_then_sleeps":
        assert IDLE_SECONDS <= took < 10, f"{took:.1f} s"
    else:
        # A loop is told by the CPU it used, so on a loaded machine later than in the 7 s it
        # takes on a quiet one: told at the first polls past SPIN_CPU_SECONDS (the launch's
        # timeout would have let it compute several times as long).
        cpu = float(re.search(r"computed for ([\d.]+) CPU-seconds", message)[1])
        assert SPIN_CPU_SECONDS <= cpu < SPIN_CPU_SECONDS + 2, message


def test_where_no_cpu_reading_exists_a_loop_is_told_by_the_clock_and_not_called_asleep(
        no_leftover_workers, monkeypatch):
    """Not Linux: /proc says nothing (each reading is its "cannot say" value). A loop then
    looks like a sleep to the clock; the message says what is known (no progress), not
    "asleep"."""
    from labs.harness.launch import supervise
    for name, unknown in (("main_thread_cpu_seconds", None), ("core_wait_seconds", 0.0),
                          ("cpu_seconds", 0.0), ("bytes_moved", 0)):
        monkeypatch.setattr(supervise, name, lambda pid, unknown=unknown: unknown)
    grade(graded_body, 2, args=("_swap",))
    started = time.perf_counter()
    with pytest.raises(GradeFailure) as info:
        grade(graded_body, 2, args=("exchange_then_spins",), what="spins")
    took, message = time.perf_counter() - started, str(info.value)
    here = _line(report_idle.exchange_then_spins, "total +=")
    assert re.search(rf"Rank [01] has made no progress outside torch.distributed for \d+ s at "
                     rf"{re.escape(here)} \(a loop, a sleep", message), message
    assert "asleep" not in message and IDLE_SECONDS <= took < 10, (f"{took:.1f} s", message)


def test_a_body_that_waits_for_a_core_is_slow_not_stuck(no_leftover_workers):
    """Both ranks compute for 8 s at nice 19 beside a busier process on their one core:
    outside torch.distributed, using almost no CPU (under 0.1 s each), as a rank starved on
    a loaded machine is. The time it waits for the core counts as work: it is graded."""
    results = grade(graded_body, 2, args=("exchange_then_starved",))
    assert [r.tolist() for r in results] == [[1.0] * 4, [0.0] * 4]
