"""Fixtures every test folder shares, and `make check`'s grade sheet."""
import importlib

import pytest

from labs import last_worker_pids
from labs.harness.exercises import exercises_in
from labs.harness.grading.sheet import GRADERS, grade_sheet
from tests import course, procs


@pytest.fixture
def impl(request):
    """'solutions' (CI) or 'labs' (make check): which implementation the graders grade."""
    return request.config.getoption("--impl")


@pytest.fixture
def no_leftover_workers():
    """Assert that every worker the test launched is gone when it ends."""
    yield
    left = procs.kill_leftovers(last_worker_pids())
    assert not left, f"worker processes left behind: {left}"


def pytest_configure(config):
    config.addinivalue_line("markers", "grades(*exercises): the exercises a grader test grades "
                                       "(default: the one named in the test's name)")
    config._grades = {}


def pytest_collection_modifyitems(config, items):
    """Remember which exercises each grader test grades, for the grade sheet."""
    for item in items:
        marker = item.get_closest_marker("grades")
        if marker and item.nodeid.startswith(GRADERS):
            config._grades[item.nodeid] = marker.args


def _sheet(config):
    """The grade sheet of this session, when it grades labs/ (make check); else None."""
    if config.getoption("--impl") != "labs":
        return None
    if getattr(config, "_sheet", None) is None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        stats = reporter.stats if reporter else {}
        config._sheet = grade_sheet(stats, *_exercises(), config._grades)
    return config._sheet


def _exercises():
    """(lesson, module, exercise) in lesson order, and {module: why} for the lab modules
    that do not even import (a syntax error in your labs/<module>.py)."""
    found, broken = [], {}
    for lesson in course.lessons():
        if not lesson.module:
            continue
        try:
            module = importlib.import_module(f"labs.{lesson.module}")
        except Exception as exc:  # noqa: BLE001 - the sheet reports it
            broken[lesson.module] = (lesson.number, f"{type(exc).__name__}: {exc}")
            continue
        found += [(lesson.number, lesson.module, name) for name in exercises_in(module)]
    return found, broken


def pytest_sessionfinish(session, exitstatus):
    """Unsolved exercises are the learner's normal state, not an error: `make check` exits
    0 unless an exercise you started fails (or a grader could not run)."""
    sheet = _sheet(session.config)
    if sheet is not None and sheet.rows and exitstatus == pytest.ExitCode.TESTS_FAILED \
            and not sheet.failing:
        session.exitstatus = pytest.ExitCode.OK


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    sheet = _sheet(config)
    if sheet is not None and sheet.rows:
        terminalreporter.section("grade sheet: your exercises in labs/")
        for line in sheet.lines():
            terminalreporter.write_line(line)
