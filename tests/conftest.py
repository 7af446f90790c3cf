import ctypes
import os
import signal
import sys

import pytest

from labs import last_worker_pids


@pytest.fixture
def impl(request):
    """'solutions' (CI) or 'labs' (make check): which implementation the graders grade."""
    return request.config.getoption("--impl")


def alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie (checks the OS, not our handles)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


@pytest.fixture
def no_leftover_workers():
    """Assert that every worker the test launched is gone when it ends."""
    yield
    import time
    pids = last_worker_pids()
    deadline = time.time() + 5
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"worker processes left behind: {left}"


# If pytest itself is killed (a CI timeout, ^C twice), its teardown never runs; children
# that live in a session of their own would then outlive it. On Linux they get SIGKILL
# when this process dies instead (PR_SET_PDEATHSIG); elsewhere this does nothing.
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
    _PRCTL = _LIBC.prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _PRCTL = None


def die_with(parent: int):
    """A preexec_fn (runs in the child between fork and exec): die with `parent`."""
    def preexec():
        if _PRCTL is not None:
            _PRCTL(1, signal.SIGKILL)       # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:      # it died before prctl took effect
                os._exit(1)
    return preexec


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """`make check`: a grade sheet, one line per exercise grader, with the first reason."""
    if config.getoption("--impl") != "labs":
        return
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
               if getattr(r, "when", "") == "call" and "grader" in r.keywords]
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
            entry["why"] = message.replace("labs.harness.grading.GradeFailure: ", "").splitlines()[0]
    write = terminalreporter.write_line
    terminalreporter.section("grade sheet (your code in labs/)")
    for name, e in sorted(sheet.items()):
        mark = "PASS" if e["passed"] == e["total"] else "FAIL"
        write(f"{mark} {name}  {e['passed']}/{e['total']}")
        if e["why"]:
            write(f"     {e['why'][:300]}")
    solved = sum(e["passed"] == e["total"] for e in sheet.values())
    write(f"{solved}/{len(sheet)} graders pass. Details for one lesson: "
          f".venv/bin/python -m pytest -m grader --impl=labs tests/test_<lesson>.py")
