"""A hazard is named at the script's own frames, innermost first, each with its call site,
as a traceback shows them (labs/harness/grading/callers.py `frames()`, streamed by the agent,
printed by labs/doctor/report.py). Real torchrun jobs, both ways.
"""
from __future__ import annotations

import pytest

from labs.doctor import CLEAN
from labs.doctor.report import show_path
from labs.harness.grading import callers
from tests.doctor.sweeps import over_sizes
from tests.doctor.test_doctor import at, doctor, finding

HELPER = "helper_attend.py"


def shown(script: str, text: str) -> str:
    return show_path(at(script, text))


@pytest.mark.slow
def test_a_read_inside_a_helper_is_named_with_the_line_that_called_it():
    report = doctor(HELPER, 3, "--bug")
    read = at(HELPER, "scores = q @ k")
    finding(report, "buffer_in_flight", {0, 1, 2}, read)
    lines = report.text().splitlines()
    inside = f"        {shown(HELPER, 'scores = q @ k')} in attend"
    caller = f"          <- called from {shown(HELPER, 'out += attend(q, next_k')} in main"
    assert inside in lines and lines[lines.index(inside) + 1] == caller, report.text()
    assert f"          <- called from {shown(HELPER, '    main()')} in <module>" in lines


@pytest.mark.slow
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_the_helper_called_after_its_wait_is_clean(nproc):
    report = doctor(HELPER, nproc)
    assert report.findings == [] and report.status == 0 and CLEAN in report.text(), \
        report.text()


def _inner():
    return callers.frames()


def _outer():
    return _inner()


def test_frames_are_the_callers_own_innermost_first():
    frames = _outer()
    assert [f.function for f in frames[:3]] == ["_inner", "_outer", frames[2].function]
    assert frames[0].where.endswith(f"test_frames.py:{_inner.__code__.co_firstlineno + 1}")
    assert frames[1].where.endswith(f"test_frames.py:{_outer.__code__.co_firstlineno + 1}")
