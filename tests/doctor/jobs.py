"""One doctor run per job in a test session, whichever module or xdist worker asks first.

Every test module of tests/doctor/ (and the graders' doctor test) asks for its jobs here: the
same (script, ranks, arguments, deadline) is one torchrun job per session, its Report shared.
A job costs a launcher and a process per rank, each importing torch (about 2 s of CPU each),
and several modules check the same scripts (a hazard named by one module, its trace or its
groups by another). Across xdist workers the reports are pickled in the session's folder
(conftest.py sets JOBS_ENV); a lock per job makes a second worker wait for the first's run
instead of starting its own. Without the folder (a module run alone), one run per process.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:           # conftest.py imports JOBS_ENV: no doctor imports for every session
    from labs.doctor import Report

JOBS_ENV = "P2P_COURSE_DOCTOR_JOBS"      # the session's folder of reports (conftest.py)
_ran: dict[tuple, Report] = {}          # this process's reports, by job


def report_of(script, nproc: int, *args: str, deadline: float = 90.0) -> Report:
    """The doctor's report on `script` (a path) at `nproc` ranks with `args`, run once."""
    key = (str(Path(script).resolve()), nproc, tuple(args), float(deadline))
    if key not in _ran:
        _ran[key] = _shared(key) if os.environ.get(JOBS_ENV) else _examine(key)
    return _ran[key]


def _examine(key: tuple) -> Report:
    from labs.doctor import Job, examine
    script, nproc, args, deadline = key
    return examine(Job(script, list(args), [f"--nproc-per-node={nproc}"], deadline_s=deadline))


def _shared(key: tuple) -> Report:
    """The report another worker saved for `key`, else this worker's run, saved."""
    name = hashlib.sha1(repr(key).encode()).hexdigest()
    saved = Path(os.environ[JOBS_ENV]) / f"{name}.pickle"
    with open(saved.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        report = _examine(key)
        saved.with_suffix(".part").write_bytes(pickle.dumps(report))
        saved.with_suffix(".part").rename(saved)
        return report
