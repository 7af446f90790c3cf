"""The claims ledger (labs/claims): every claim holds on the pinned torch, and a claim that
stops holding is reported: the command exits non-zero and check() raises."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from labs.claims import CLAIMS, ClaimResult, check, claim, evaluate, get
from labs.claims.__main__ import main
from tests.procs import die_with, group_members, kill_leftovers

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^(\S+)\s+(\d\d)\s+(holds|BROKEN|sourced)\s+(.*)$")


@pytest.fixture
def broken_claims():
    """Two claims registered for this test only, in a lesson of their own ("99")."""
    @claim(lesson="99", text="a claim this test breaks on purpose")
    def deliberately_broken():
        return ClaimResult(holds=False, observed="the opposite")

    @claim(lesson="99", text="a claim whose check itself fails")
    def check_that_raises():
        raise RuntimeError("no workers today")

    yield
    del CLAIMS["deliberately_broken"], CLAIMS["check_that_raises"]


@pytest.mark.slow
def test_every_claim_holds_on_real_workers():
    # A session of its own: every process the command starts (fork server, workers) is in
    # its process group, so what is left of it afterwards can be found and killed.
    run = subprocess.Popen([sys.executable, "-m", "labs.claims"], cwd=ROOT, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True, preexec_fn=die_with(os.getpid()))
    try:
        out, _ = run.communicate(timeout=240)
    finally:
        run.kill()
        left = kill_leftovers(group_members(run.pid))
    rows = [m.groups() for m in map(ROW.match, out.splitlines()) if m]
    assert run.returncode == 0, out
    assert len(rows) == len(CLAIMS) >= 20, out
    assert [r for r in rows if r[2] == "BROKEN"] == [], out
    sourced = [r for r in rows if r[2] == "sourced"]
    assert all(r[0].startswith("nccl_") and "NCCL, not run here; source: " in r[3]
               for r in sourced), out
    assert (f"{len(rows)} claims: {len(rows) - len(sourced)} hold, 0 BROKEN; "
            f"{len(sourced)} NCCL claims sourced, not run here") in out
    assert not left, f"processes left behind by python -m labs.claims: {left}"


def test_a_broken_claim_fails_the_command(broken_claims, capsys):
    assert main(["--lesson", "99"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"deliberately_broken\s+99\s+BROKEN\s+the opposite", out), out
    assert re.search(r"check_that_raises\s+99\s+BROKEN\s+the check raised RuntimeError: "
                     r"no workers today", out), out
    assert "2 claims: 0 hold, 2 BROKEN (deliberately_broken, check_that_raises)" in out


def test_check_raises_on_a_broken_claim(broken_claims):
    with pytest.raises(AssertionError, match=r"claim BROKEN: a claim this test breaks on "
                                             r"purpose \(observed: the opposite\)"):
        check("deliberately_broken")
    assert evaluate(get("check_that_raises")) == ClaimResult(
        False, "the check raised RuntimeError: no workers today")


def test_check_prints_one_stable_line(capsys, no_leftover_workers):
    assert check("is_completed_stays_false_on_gloo") is None
    assert capsys.readouterr().out == (
        "claim holds: a gloo point-to-point Work reports is_completed() == False until "
        "wait(), even when the data has arrived (observed: isend after the peer's recv "
        "returned: False, after wait: True; irecv with the data in its buffer (True): False, "
        "after wait: True)\n")


def test_nccl_claims_are_labelled_and_sourced_never_run(capsys):
    nccl = [c for c in CLAIMS.values() if c.sourced]
    assert nccl and all(c.id.startswith("nccl_") for c in nccl)
    check(nccl[0].id)
    out = capsys.readouterr().out
    assert out.startswith("NCCL, not run here: ") and f"(source: {nccl[0].source})" in out


def test_list_and_unknown_ids(capsys):
    assert main(["--list", "--lesson", "3"]) == 0
    listed = capsys.readouterr().out.splitlines()[1:]
    assert {line.split()[1] for line in listed} == {"03"} and len(listed) >= 4
    with pytest.raises(KeyError, match="Did you mean is_completed_stays_false_on_gloo"):
        get("is_completed_stays_false")
    assert main(["--lesson", "42"]) == 2


def _ledger_cells(text):
    """The ledger column (the last) of every rules-card table row in `text`."""
    rows = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(" |")]
    return [row.rstrip(" |").rsplit(" | ", 1)[-1] for row in rows
            if not row.startswith(("| rule |", "|---"))]


def _named_claims(text):
    return {name for cell in _ledger_cells(text) for name in re.findall(r"`(\w+)`", cell)}


def test_rules_cards_point_to_claims_that_exist():
    """Every ledger entry a rules card names (in a notebook or in notebooks/RULES.md) is a
    claim of the ledger; the README links the one-page rules."""
    rules = (ROOT / "notebooks" / "RULES.md").read_text()
    assert "notebooks/RULES.md" in (ROOT / "README.md").read_text()
    for lesson in ("00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"):
        assert f"\n## {lesson} · " in rules, f"RULES.md has no section for lesson {lesson}"
    named = _named_claims(rules)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        cards = ["".join(c["source"]) for c in cells
                 if c["cell_type"] == "markdown" and "## Rules card" in "".join(c["source"])]
        named |= {name for card in cards for name in _named_claims(card)}
    assert named, "no rules card names a claim"
    assert sorted(named - set(CLAIMS)) == [], "rules cards name claims the ledger does not have"
