"""What the doctor's job tests share: the scripts' folders, one doctor run per script and
world size (cached: a hazard and the checks on it read one run), a script's line by its text."""
from __future__ import annotations

import functools

from labs.doctor import CLEAN, Job, examine
from labs.harness.commands.torchrun import ROOT

SCRIPTS = ROOT / "labs" / "scripts" / "doctor"
NCCL = SCRIPTS / "nccl"
DEADLINE = 90.0
__all__ = ["CLEAN", "DEADLINE", "NCCL", "ROOT", "SCRIPTS", "at", "clean", "doctor", "only"]


def at(script, text: str) -> str:
    """"<script>:<line>" of the first line of `script` that holds `text`."""
    lines = script.read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if text in line]
    assert found, f"{text!r} is not in {script}"
    return f"{script}:{found[0]}"


@functools.cache
def doctor(script, nproc: int, *args: str):
    """The doctor's report on `script` under torchrun with `nproc` ranks; nothing left over."""
    report = examine(Job(str(script), list(args), [f"--nproc-per-node={nproc}"],
                         deadline_s=DEADLINE))
    assert not report.outcome.leftovers, report.outcome.leftovers
    return report


def clean(report) -> None:
    """A clean bill: exit 0, no problem, and nothing the model left out."""
    assert report.status == 0 and not report.problems, report.text()
    assert CLEAN in report.text() and "not modelled: the script made other" not in report.text()


def only(report, kind):
    """The problems of `kind`, at least one."""
    found = report.by_kind(kind)
    assert found, f"no {kind}:\n{report.text()}"
    return found
