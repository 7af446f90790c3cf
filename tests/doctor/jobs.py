"""One doctor run per job in a test session, whichever module or xdist worker asks first.

Every test module of tests/doctor/ (and the graders' doctor test) asks for its jobs here: the
same (script, ranks, arguments, deadline) is one torchrun job per session, its Report shared
(labs/harness/once.py). A job costs a launcher and a process per rank, each importing torch
(about 2 s of CPU each), and several modules check the same scripts (a hazard named by one
module, its trace or its groups by another).
Also what the job tests share: the scripts' folders, a clean bill, a script's line by text.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labs.harness import COURSE_ROOT as ROOT
from labs.harness.once import once

if TYPE_CHECKING:           # no doctor imports for every session that imports this module
    from labs.doctor import Report

_ran: dict[tuple, Report] = {}          # this process's reports, by job
SCRIPTS = ROOT / "labs" / "scripts" / "doctor"
NCCL = SCRIPTS / "nccl"
DEADLINE = 90.0


def report_of(script, nproc: int, *args: str, deadline: float = 90.0) -> Report:
    """The doctor's report on `script` (a path) at `nproc` ranks with `args`, run once."""
    key = (str(Path(script).resolve()), nproc, tuple(args), float(deadline))
    if key not in _ran:
        _ran[key] = once("doctor-job", key, lambda: _examine(key))
    return _ran[key]


def _examine(key: tuple) -> Report:
    from labs.doctor import Job, examine
    script, nproc, args, deadline = key
    return examine(Job(script, list(args), [f"--nproc-per-node={nproc}"], deadline_s=deadline))


def __getattr__(name: str):
    """CLEAN, the doctor's clean-bill words, imported only when a test asks for them."""
    if name == "CLEAN":
        from labs.doctor import CLEAN
        return CLEAN
    raise AttributeError(name)


def doctor(script, nproc: int, *args: str, deadline: float = DEADLINE):
    """The doctor's report on `script` (a path, or a name in SCRIPTS) under torchrun with
    `nproc` ranks, within `deadline`; nothing left over."""
    report = report_of(SCRIPTS / script, nproc, *args, deadline=deadline)
    assert not report.outcome.leftovers, report.outcome.leftovers
    assert report.outcome.seconds <= deadline, report.outcome.seconds
    return report


def line_of(script, text: str) -> int:
    """The number of the first line of `script` (a path, or a name in SCRIPTS) holding `text`."""
    lines = (SCRIPTS / script).read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if text in line]
    assert found, f"{text!r} is not in {script}"
    return found[0]


def at(script, text: str) -> str:
    """"<script's path>:<line>" of the first line of `script` that holds `text`."""
    return f"{SCRIPTS / script}:{line_of(script, text)}"


def clean(report) -> None:
    """A clean bill: exit 0, no problem, and nothing the model left out."""
    assert report.status == 0 and not report.problems, report.text()
    from labs.doctor import CLEAN
    assert CLEAN in report.text() and "not modelled: the script made other" not in report.text()


def only(report, kind):
    """The problems of `kind`, at least one."""
    found = report.by_kind(kind)
    assert found, f"no {kind}:\n{report.text()}"
    return found
