"""One run per key in a test session, whichever process asks first.

A test session asks for the same costly run from several processes: a doctor job from the
doctor's test modules on every xdist worker (tests/doctor/jobs.py), a claim from the ledger's
test, strict nbval's kernels and the learner runs' kernels (labs/claims/registry.py). Each is
real workers, every one importing torch. When SESSION_ENV names a folder (conftest.py makes
it before xdist starts its workers, so they and their kernels inherit it, and removes it
after), the first process to ask for a key runs it and pickles the result there; a lock per
key makes a second process wait for that run instead of starting its own. The result is as
real as that run: nothing outlives the session.

Without the folder (a reader's JupyterLab, `python -m labs.claims`, a test run alone) every
ask runs.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from pathlib import Path
from typing import Callable, TypeVar

SESSION_ENV = "P2P_COURSE_TEST_SESSION"
T = TypeVar("T")


def once(kind: str, key, run: Callable[[], T]) -> T:
    """The session's one result of `run` for (`kind`, `key`); `key` is repr()-stable."""
    folder = os.environ.get(SESSION_ENV)
    if not folder or not Path(folder).is_dir():
        return run()
    saved = Path(folder) / f"{kind}-{hashlib.sha1(repr(key).encode()).hexdigest()}.pickle"
    with open(saved.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        result = run()
        saved.with_suffix(".part").write_bytes(pickle.dumps(result))
        saved.with_suffix(".part").rename(saved)
        return result
