"""Notebook 12's side: run the point-to-point doctor on a script from a cell and print its
report, the same on every run (timings and the picture apart).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from labs.doctor import CLEAN, Job, Report, examine
from labs.doctor.timeline import save
from labs.harness.commands.torchrun import ROOT
from labs.harness.ranks.exercises import solution_wanted

SCRIPTS = ROOT / "labs" / "scripts" / "doctor"
_reports: dict[str, Report] = {}


def show_source(script: str, start: int = 1, stop: int | None = None):
    """Print labs/scripts/doctor/<script>, lines start..stop (numbered as the report counts)."""
    lines = (SCRIPTS / script).read_text().rstrip().splitlines()
    for n, line in enumerate(lines[start - 1:stop], start):
        print(f"{n:3d}  {line}")


def diagnose(script: str, nproc: int, *args: str, deadline: float = 120.0) -> Report:
    """`python -m labs.doctor --nproc-per-node N labs/scripts/doctor/<script> ARGS`: print
    the report without its timings, then the exit status the command would return."""
    job = Job(str(SCRIPTS / script), list(args), [f"--nproc-per-node={nproc}"], deadline)
    report = examine(job)
    report.command = report.command.replace(str(ROOT) + "/", "")
    _reports[script] = report
    print(report.text(timings=False))
    print(f"exit status: {report.status}")
    return report


EXERCISE = Path("scripts") / "halo_exchange.py"
GRADE = ".venv/bin/python -m pytest --impl=labs tests/graders/test_doctor.py"


def diagnose_exercise(nproc: int) -> Report:
    """Section 7: the doctor on your labs/scripts/halo_exchange.py (on the reference,
    solutions/scripts/, when the solutions are on: the committed outputs), then where you
    stand and how to grade it."""
    folder = "solutions" if solution_wanted("halo_exchange") else "labs"
    job = Job(str(ROOT / folder / EXERCISE), [], [f"--nproc-per-node={nproc}"], 120.0)
    report = examine(job)
    report.command = report.command.replace(str(ROOT) + "/", "")
    print(report.text(timings=False))
    print(f"exit status: {report.status}")
    if report.status:
        print(f"\nNot fixed yet: labs/{EXERCISE}; the reference gets exit status 0 and "
              f"\"{CLEAN}\".\nFix each problem, run this cell again; grade it: {GRADE}")
    else:
        print(f"\nClean. Grade it on 2, 3 and 4 ranks (values and method too): {GRADE}")
    return report


def show_outputs(report: Report):
    """What each rank printed, in rank order."""
    for rank, out in sorted(report.outputs.items()):
        for line in out.stdout.splitlines():
            print(f"[rank {rank}] {line}")


def show_timeline(report: Report):
    """The run's timeline with the problems marked (the PNG the command saves)."""
    from IPython.display import Image, display
    with tempfile.TemporaryDirectory(prefix="p2p-doctor-png-") as folder:   # left no trace
        path = save(report, Path(folder) / "timeline.png")
        if path is None:
            print("(no timeline: the run recorded no call)")
            return
        display(Image(data=path.read_bytes()))


def show_timings(report: Report):
    print("\n".join(report.timings))
