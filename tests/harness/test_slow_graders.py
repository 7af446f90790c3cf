"""Issue 52 item 10, graders that took over a minute: a body that polls is_completed()
forever is found once, at the first world size make check grades, not again at each of
the others (fail fast: the first failing run ends the exercise's grading)."""
from __future__ import annotations

import re
import time

import pytest

from tests.harness.test_make_check import _check, _copy, _write_exchange_batched


@pytest.mark.slow
def test_a_body_that_polls_forever_is_found_once(tmp_path, no_leftover_workers):
    course = _copy(tmp_path)
    _write_exchange_batched(course, """
        received = torch.empty_like(tensor)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                        dist.P2POp(dist.irecv, received, peer)])
        while not all(work.is_completed() for work in works):
            pass
        return received
    """)
    started = time.perf_counter()
    run = _check(course, tmp_path / "grades.json", "--lesson=04", sizes=(2, 3, 4, 5))
    took = time.perf_counter() - started
    out = run.stdout
    assert run.returncode == 1, out[-3000:] + run.stderr[-3000:]
    assert re.search(r"exchange_batched  FAILING at world size 2; 3 run\(s\) not graded", out), out
    assert "(not graded at 3, 4, 5:" in out, out
    # one launch that stops, not one per world size (issue 52: 49 s at 7 world sizes)
    assert took < 60, f"make check took {took:.0f} s"
