"""Fixtures every test folder shares, and `make check`'s grade sheet."""
import re

import pytest

from labs import last_worker_pids
from tests import course, procs

GRADERS = "tests/graders/"


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


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """`make check`: a grade sheet, one line per exercise grader, with the first reason."""
    if config.getoption("--impl") != "labs":
        return
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
               if getattr(r, "when", "") == "call" and r.nodeid.startswith(GRADERS)]
    if not reports:
        return
    sheet = {}
    for r in reports:
        name = r.nodeid.split("[", 1)[0]
        entry = sheet.setdefault(name, {"passed": 0, "total": 0, "why": ""})
        entry["total"] += 1
        if r.passed:
            entry["passed"] += 1
        elif not entry["why"]:
            crash = getattr(r.longrepr, "reprcrash", None)
            message = crash.message if crash else str(r.longrepr)
            entry["why"] = re.sub(r"^\S*GradeFailure: ", "", message).splitlines()[0]
    order = {f"{GRADERS}test_{m}.py": i for i, m in enumerate(course.lesson_modules())}
    write = terminalreporter.write_line
    terminalreporter.section("grade sheet (your code in labs/)")
    for name, e in sorted(sheet.items(), key=lambda item: order.get(item[0].split("::")[0], 99)):
        mark = "PASS" if e["passed"] == e["total"] else "FAIL"
        write(f"{mark} {name}  {e['passed']}/{e['total']}")
        if e["why"]:
            write(f"     {e['why'][:300]}")
    solved = sum(e["passed"] == e["total"] for e in sheet.values())
    write(f"{solved}/{len(sheet)} graders pass. Details for one lesson: "
          f".venv/bin/python -m pytest --impl=labs {GRADERS}test_<lesson>.py")
