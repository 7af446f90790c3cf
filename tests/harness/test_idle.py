"""A body stuck outside torch.distributed (asleep, using no CPU) is told within
10 s while graded, at its line: grade() passes launch's idle_after (IDLE_SECONDS)."""
import inspect
import re
import time

import pytest
import torch

from labs.harness.grading.run import GradeFailure, grade
from labs.harness.launch.spec import IDLE_SECONDS
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


# A body that computes forever (exchange_then_spins) is told by the launch's timeout: CPU
# used is progress, so a slow body that computes is never told as stuck.
@pytest.mark.parametrize("body, at", [("exchange_then_sleeps", "time.sleep")])
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
    # Both ranks sleep at the same line; the first past IDLE_SECONDS is named, and which
    # one that is depends on which left the exchange first (rank 1 in one CI run).
    assert re.search(rf"Rank [01] has been outside torch.distributed for \d+ s at {re.escape(here)} "
                     rf"\(a sleep or a loop that never ends\?\)", message), message
    assert IDLE_SECONDS <= took < 10, f"{took:.1f} s"


def test_a_body_that_waits_for_a_core_is_slow_not_stuck(no_leftover_workers):
    """Both ranks compute for 8 s at nice 19 beside a busier process on their one core:
    outside torch.distributed, using almost no CPU (under 0.1 s each), as a rank starved on
    a loaded machine is. The time it waits for the core counts as work: it is graded."""
    results = grade(graded_body, 2, args=("exchange_then_starved",))
    assert [r.tolist() for r in results] == [[1.0] * 4, [0.0] * 4]
