"""Lesson 12 (labs/scripts/halo_exchange.py): the grader of the script you fix, run the way
you run it, under the doctor (`python -m labs.doctor --nproc-per-node N SCRIPT`).

A PASS means, on 2, 3 and 4 ranks: the doctor finds no problem on gloo and predicts none on
NCCL (exit status 0); every rank prints the cells the smoothing must give (computed here,
from every rank's starting cells); and the record shows the method: point-to-point only,
every step one edge value sent to each neighbour and one received from each, each request
waited. Deleting the communication, or a collective in its place, is not a fix.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from labs.doctor import Job, examine
from labs.harness.grading import GradeFailure

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "scripts/halo_exchange.py"
CELLS, STEPS = 6, 3              # as in the script
DEADLINE_S = 60.0
GRADED_FILES = (ROOT / "labs" / SCRIPT,)   # make check re-grades when the script changes
# The script as shipped: make check says "not started" without running it (a test keeps
# this in step with labs/scripts/halo_exchange.py).
SHIPPED_SHA256 = "12509f5b64517f616b3a258a74254ed52baa598b8bde46d77ca1c721bf3521c7"


def script_of(impl: str) -> Path:
    """labs/ (make check), solutions/ (CI), or a script named as a module (the graders' own
    tests: "tests.graders.bodies.scripts:halo_all_gather")."""
    if impl in ("labs", "solutions"):
        return ROOT / impl / SCRIPT
    return ROOT.joinpath(*impl.replace(":", ".").split(".")).with_suffix(".py")


def expected_cells(world_size: int) -> list[list[float]]:
    """Every rank's cells after STEPS smoothing steps of the whole periodic field."""
    field = torch.cat([torch.arange(CELLS, dtype=torch.float64) ** 2 + 100 * r
                       for r in range(world_size)])
    for _ in range(STEPS):
        field = (field.roll(1) + field + field.roll(-1)) / 3
    return [field[r * CELLS:(r + 1) * CELLS].tolist() for r in range(world_size)]


def _printed(report, rank) -> list[float] | None:
    out = report.outputs.get(rank)
    found = re.search(rf"^rank {rank}: (.*)$", out.stdout if out else "", re.M)
    return [float(x) for x in found.group(1).split()] if found else None


def _method_problems(report, world_size) -> list[str]:
    """Point-to-point only; each step one value to and from each neighbour; all waited."""
    problems = []
    for rank, run in sorted(report.runs.items()):
        calls = [c for c in run.calls if c.kind != "sync"]
        other = sorted({c.name for c in calls if not c.p2p})
        if other:
            problems.append(f"rank {rank} called {', '.join(other)}: the exercise exchanges "
                            f"the halo point to point")
            continue
        neighbours = sorted({(rank - 1) % world_size, (rank + 1) % world_size})
        for kind in ("send", "recv"):
            # messages, not values: a deeper halo sent once holds as many values
            per_peer = {p: sum(1 for c in calls if c.kind == kind and c.peer == p)
                        for p in neighbours}
            wide = [c for c in calls if c.kind == kind and (c.numel != 1 or c.dtype != "float64")]
            want = STEPS * (2 if len(neighbours) == 1 else 1)
            strangers = sorted({c.peer for c in calls if c.kind == kind} - set(neighbours),
                               key=str)
            if wide:
                problems.append(f"rank {rank}: {wide[0].describe()}; the method: one edge "
                                f"value per message (float64, as the cells are), one message "
                                f"each way per neighbour per step ({STEPS} steps)")
            elif strangers or any(n != want for n in per_peer.values()):
                verb = "sent to" if kind == "send" else "received from"
                got = ", ".join(f"rank {p}: {n}" for p, n in per_peer.items())
                problems.append(f"rank {rank} {verb} its neighbours {got} message(s)"
                                f"{' and ranks ' + str(strangers) if strangers else ''}; the "
                                f"method: one edge value each way per neighbour per step "
                                f"({STEPS} steps)")
        unwaited = [c for c in calls if c.p2p and not c.blocking and not c.waited]
        if unwaited:
            problems.append(f"rank {rank}: {unwaited[0].describe()} never waited")
    return problems


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_halo_exchange(impl, world_size):
    script = script_of(impl)
    report = examine(Job(str(script), [], [f"--nproc-per-node={world_size}"], DEADLINE_S))
    where = script.relative_to(ROOT)
    # A script that finished without communicating (exit 2, nothing to check) is a method
    # problem: the halo never travelled. The method check below says so.
    silent = report.outcome is not None and report.outcome.returncode == 0 and \
        not report.findings and not any(run.calls for run in report.runs.values())
    if report.status != 0 and not silent:
        kinds = sorted({f.kind for f in report.findings})
        raise GradeFailure(
            f"halo_exchange on {world_size} ranks: the doctor reports "
            f"{len(report.findings)} problem(s) ({', '.join(kinds) or 'the script failed'}); "
            f"run `.venv/bin/python -m labs.doctor --nproc-per-node {world_size} {where}` "
            f"and fix each one:\n" + report.text(timings=False))
    problems = _method_problems(report, world_size)
    for rank, cells in enumerate(expected_cells(world_size)):
        got = _printed(report, rank)
        if got is None:
            problems.append(f"rank {rank} printed no line 'rank {rank}: ...' with its cells")
        elif len(got) != len(cells) or any(abs(a - b) > 1e-5 * max(1.0, abs(b))
                                           for a, b in zip(got, cells)):
            problems.append(f"rank {rank} printed {got}; the smoothing gives "
                            f"{[round(c, 6) for c in cells]}")
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise GradeFailure(f"halo_exchange on {world_size} ranks: the doctor is clean, but "
                           f"{problems[0]}{more}")
