"""Fixtures every test folder shares; `make check` (--impl=labs) is tests/check.py."""
import pytest

from labs import last_worker_pids
from labs.harness.launch.launcher import preload_also
from tests import procs

# Every grader's workers import these: the fork server imports them once instead.
preload_also("pytest", "labs.harness.grading", "labs.harness.grading.preload")


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
    if config.getoption("--impl") == "solutions":     # the suite, not make check
        preload_also("tests.graders.preload_bodies")
    config.addinivalue_line("markers", "grades(*exercises): the exercises a grader test grades "
                                       "(default: the one named in the test's name)")
    if config.getoption("--impl") == "labs":       # grading your labs/: make check's plugin
        from tests.check import Check
        config.pluginmanager.register(Check(config), "p2p-check")
