"""Notebook 12's side: run the point-to-point doctor on a script from a cell and print its
report, the same on every run (timings and the picture apart).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from labs.doctor import Job, Report, examine
from labs.doctor.timeline import save
from labs.harness.commands.torchrun import ROOT

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


def show_outputs(report: Report):
    """What each rank printed, in rank order."""
    for rank, out in sorted(report.outputs.items()):
        for line in out.stdout.splitlines():
            print(f"[rank {rank}] {line}")


def show_timeline(report: Report):
    """The run's timeline with the problems marked (the PNG the command saves)."""
    from IPython.display import Image, display
    folder = Path(tempfile.mkdtemp(prefix="p2p-doctor-png-"))
    path = save(report, folder / "timeline.png")
    display(Image(filename=str(path)))


def show_timings(report: Report):
    print("\n".join(report.timings))
