"""The reference graded once (labs/harness/grading/reference_cache.py): a grader run on a
learner body records the reference's communication into a folder (a temporary one here,
never the learner's files), kept when the launch ended with every rank done; graded again,
the kept records give the same verdict as the live ones, and every one was used (all ranks
found theirs: nothing hung, also where a rank sits out a round, lesson 04 at 3 ranks). A change of solutions/
or of the harness misses the cache; an edit of your body in labs/ does not.
"""
from __future__ import annotations

import os
import shutil

import pytest

from labs.harness.grading import GradeFailure
from labs.harness.grading.reference_cache import CACHE_ENV, frame
from tests.graders import (test_batching, test_collectives, test_deadlocks, test_gradients,
                           test_p2p, test_patterns, test_ring, test_waiting)
from tests.harness.catalogue import RIGHT, WRONG
from tests.harness.catalogue.messages import BODIES, HUNG
from tests.course import ROOT

# About ten bodies across the lessons, wrong and right, a reference that refuses among them
# (checked_exchange on a mismatch), a reduction's probes (the ring), a model (lesson 06).
SUBSET = [
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_local"),
    (test_batching.test_exchange_with_neighbours, 3, "batching:neighbours_two_batches"),
    (test_waiting.test_safe_ring_shift, 2, "waiting:shift_not_waited"),
    (test_deadlocks.test_checked_exchange, 2, "deadlocks:checked_says_mismatch"),
    (test_deadlocks.test_exchange_batched, 3, "deadlocks:batched_receive_first"),  # a rank
    #                                                            sits out each round at 3
    (test_ring.test_ring_reduce_scatter, 2, "ring:rs_float32"),
    (test_ring.test_ring_all_reduce, 3, "ring:ring_parity_blocking"),
    (test_gradients.test_average_gradients_bucketed, 2, "gradients.causes:bucketed_divides_first"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives:all_to_all_receives_first"),
    (test_patterns.test_rotate_kv, 3, "patterns:rotate_receives_first_tagged"),
]
RIGHT_HERE = {body for _, _, body in RIGHT}
# The catalogue (make test-all), but the bodies that hang (a hang's message says for
# how long each rank waited, which no two runs share), each with what its failure must say.
# Which rank reports first, and what a body measured in milliseconds, varies from run to run
# (live or kept alike): there the verdicts are compared as test_graders does, the failure
# saying what the catalogue says it must.
# Lesson 12's exercise is a script the doctor runs under torchrun: no reference runs beside it.
SCRIPTS_GRADED = {"tests.graders.test_doctor"}


# One wrong and one right body per lesson (not every entry: each case here is graded twice,
# and the catalogue's own test grades them all once already).
def _per_grader(entries):
    seen, kept = set(), []
    for g, a, b, *m in entries:
        hangs = bool(m) and HUNG in (m[0] if isinstance(m[0], tuple) else (m[0],))
        if g.__module__ not in seen | SCRIPTS_GRADED and not hangs:
            seen.add(g.__module__)
            kept.append((g, a, b, m[0] if m else None))
    return kept


CATALOGUE = _per_grader(WRONG) + _per_grader(RIGHT)


def _says(verdict: str, message) -> bool:
    if message is None:
        return verdict == "passed"
    return verdict.startswith("failing") and any(
        m in verdict for m in (message if isinstance(message, tuple) else (message,)))


def _id(case):
    return f"{case[0].__name__.removeprefix('test_')}-{case[2].split(':')[1]}-{case[1]}"


def _verdict(grader, arg, body) -> str:
    try:
        grader(f"{BODIES}.{body}", arg)
    except GradeFailure as exc:
        return f"failing: {exc}"
    return "passed"


def _live_then_kept(tmp_path, monkeypatch, grader, arg, body, message=False):
    folder = tmp_path / "references"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    live = _verdict(grader, arg, body)
    kept = sorted(folder.glob("*.pt"))
    # A launch that ended with every rank done keeps its records (one that failed in a
    # worker keeps none: its ranks did not all reach the same calls).
    assert kept or live.startswith("failing"), "the reference ran and left its records"
    assert not list(folder.glob(".launch-*")), "no staging folder left behind"
    for path in kept:
        os.utime(path, (0, 0))        # a hit touches its entry
    again = _verdict(grader, arg, body)
    if message is False:
        assert again == live
    else:
        assert _says(live, message) and _says(again, message), (live, again)
    if kept:
        assert all(path.stat().st_mtime > 0 for path in kept), "every kept record was used"
    return kept


@pytest.mark.slow
@pytest.mark.parametrize("grader, arg, body", SUBSET, ids=map(_id, SUBSET))
def test_kept_records_give_the_live_verdict(tmp_path, monkeypatch, grader, arg, body):
    kept = _live_then_kept(tmp_path, monkeypatch, grader, arg, body)
    if body in RIGHT_HERE:
        assert kept, "a right body's launch keeps the reference's records"


@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("grader, arg, body, message", CATALOGUE, ids=map(_id, CATALOGUE))
def test_kept_records_give_the_live_verdict_on_the_catalogue(tmp_path, monkeypatch, grader,
                                                             arg, body, message):
    _live_then_kept(tmp_path, monkeypatch, grader, arg, body, message)


def _copy(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "test-artifacts", "notebooks", ".ipynb*"))
    return course


def _edited(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_change_of_solutions_or_the_harness_misses_and_your_body_does_not(tmp_path):
    course = _copy(tmp_path)
    before, p2p = frame("solutions.ring", course), frame("solutions.p2p", course)
    # your body in labs/ring.py: the reference does not run it
    _edited(course / "labs" / "ring.py", "def ring_all_reduce(tensor):",
            "def ring_all_reduce(tensor):\n    tensor = tensor  # mine")
    frame.cache_clear()
    assert frame("solutions.ring", course) == before
    # the reference itself: its lesson's records are missed, another lesson's are kept
    _edited(course / "solutions" / "ring.py", "def ring_all_reduce(tensor):",
            "def ring_all_reduce(tensor):  # edited")
    frame.cache_clear()
    changed = frame("solutions.ring", course)
    assert changed != before and frame("solutions.p2p", course) == p2p
    # the harness that records it
    _edited(course / "labs" / "harness" / "grading" / "record.py", "import _thread",
            "import _thread  # edited")
    frame.cache_clear()
    assert frame("solutions.ring", course) not in (before, changed)
    frame.cache_clear()
