"""Lesson 13's layout under the doctor, on real torchrun jobs: the (pp, dp) step is clean at
2, 3 and 4 ranks; two groups whose calls replicas order differently (the gradients' dp group,
the loss statistic's world group) are a cycle named at both lines; a global rank used as
group_peer is named at the call that raised, with the receives it left unmatched."""
from __future__ import annotations

import functools

import pytest

from labs.doctor import CLEAN, Job, examine
from labs.harness.commands.torchrun import ROOT
from tests.doctor.sweeps import over_sizes

pytestmark = pytest.mark.slow
SCRIPT = ROOT / "labs" / "scripts" / "doctor" / "layout_pp_dp.py"
DEADLINE = 90.0


def at(text: str) -> str:
    lines = SCRIPT.read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if text in line]
    assert found, f"{text!r} is not in {SCRIPT}"
    return f"{SCRIPT}:{found[0]}"


@functools.cache
def doctor(nproc: int, *args: str):
    report = examine(Job(str(SCRIPT), list(args), [f"--nproc-per-node={nproc}"],
                         deadline_s=DEADLINE))
    assert not report.outcome.leftovers, report.outcome.leftovers
    return report


@pytest.mark.parametrize("pp, nproc", over_sizes(("2", 2), ("3", 3), ("2", 4)))
def test_the_layouts_step_is_clean(pp, nproc):
    report = doctor(nproc, "--pp", pp)
    assert report.status == 0 and not report.problems, report.text()
    assert CLEAN in report.text() and "(1 note" not in report.text()
    assert all("grad sum" in report.outputs[r].stdout for r in range(nproc))


def test_calls_on_two_groups_in_other_orders_are_a_cycle_named_at_both_lines():
    report = doctor(4, "--pp", "2", "--bug", "order")
    [f] = report.by_kind("deadlock")
    stats_first = SCRIPT.read_text().splitlines().index(
        "        dist.all_reduce(loss, group=stats)") + 1
    assert set(map(tuple, f.where)) == {(0, at("dist.all_reduce(p.grad, group=dp)")),
                            (1, f"{SCRIPT}:{stats_first}")}, report.text()
    assert "on group" in f.gloo and "ranks [0, 1, 2, 3]" in f.gloo
    assert report.status == 1


def test_a_global_rank_as_group_peer_is_named_where_it_raised():
    report = doctor(4, "--pp", "2", "--bug", "group-rank")
    [f] = report.by_kind("call_failed")
    assert {rank for rank, _ in f.where} == {1}
    assert {w for _, w in f.where} == {at("for work in dist.batch_isend_irecv")}
    assert "Group rank 2 is not part of group" in f.gloo
    assert report.status == 1
