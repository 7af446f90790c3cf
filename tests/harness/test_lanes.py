"""The two lanes (conftest.py's --lane, pytest.ini's all_lane mark): `make test` keeps what a
reader needs, `make test-all` keeps everything, and nothing leaves both."""
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from labs.doctor.__main__ import EXIT_STATUSES
from labs.doctor.findings import LESSON
from tests.course import ROOT

# What the lanes differ on: the graders, the browser, the catalogue and the stubs proof.
PATHS = ["tests/graders", "tests/browser", "tests/harness/test_graders.py",
         "tests/harness/test_exercise_contract.py", "tests/lessons/test_algorithms.py",
         "tests/lessons/test_snippets.py", "tests/doctor"]

# Two collections in subprocesses, ~25 s each on a loaded machine: a maintainers' check.
pytestmark = [pytest.mark.slow, pytest.mark.all_lane]

# pytest, with a plugin that prints each selected test's slow and rule marks, tab-separated
WITH_MARKS = """
import sys, pytest
class Marks:
    def pytest_collection_finish(self, session):
        for item in session.items:
            for mark in item.iter_markers():
                if mark.name in ("slow", "rule"):
                    print("MARK", item.nodeid, mark.name, *mark.args, sep="\\t")
sys.exit(pytest.main(sys.argv[1:], plugins=[Marks()]))
"""
ROLES = ("hazard", "fixed", "both")
WHAT = {"hazard": "that names the kind at its line",
        "fixed": "that gives the hazard's fixed twin, or its nearest clean script, a clean bill"}
# The rules make test keeps a hazard and its fixed twin of (pytest.ini's rule mark): every
# finding kind the doctor reports, and one real-code script
RULES = {*LESSON, "real_code"}
# The exit statuses make test keeps one test of (rule("exit_N", ...)): 0 and 1 are every
# rule's tests' (a clean bill, a problem)
EXITS = {f"exit_{n}" for n in re.findall(r"^  (\d+) ", EXIT_STATUSES, re.M)} - {"exit_0", "exit_1"}


@dataclass
class Rule:
    """A rule(kind, role) mark on a test."""

    test: str
    kind: str
    role: str


@dataclass
class Lane:
    """A lane's collection: its tests, what pytest said, which of them are slow, the rules."""

    tests: list
    said: str
    slow: set
    rules: list


def collected(lane) -> Lane:
    proc = subprocess.run([sys.executable, "-c", WITH_MARKS, "--collect-only", "-q",
                           f"--lane={lane}", "-p", "no:nbval", "-p", "no:cacheprovider",
                           "-o", "addopts=", *PATHS],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    marks = [line.split("\t")[1:] for line in lines if line.startswith("MARK\t")]
    return Lane([line for line in lines if "::" in line and not line.startswith("MARK\t")],
                proc.stdout, {test for test, name, *_ in marks if name == "slow"},
                [Rule(test, *args) for test, name, *args in marks if name == "rule"])


@pytest.fixture(scope="module")
def lanes():
    return {lane: collected(lane) for lane in ("test", "all")}


def test_test_all_runs_everything_and_make_test_a_part_of_it(lanes):
    every, quick = lanes["all"], lanes["test"]
    assert "deselected" not in every.said, "make test-all leaves nothing out"
    assert set(quick.tests) < set(every.tests)


def test_make_test_leaves_out_the_catalogue_the_stubs_proof_and_all_but_one_browser_test(lanes):
    quick = lanes["test"].tests
    left_in = [t for t in quick if re.search(
        r"test_a_wrong_body|test_a_correct_body|test_ring_job_grader|fails_on_its_stub"
        r"|test_graders_fail_on_the_stubs|test_graders_reject_wrong_bodies"
        r"|test_graders_accept_other_correct_styles|test_grader_rejects_half_fixed_bodies", t)]
    assert not left_in, left_in
    browser = [t for t in quick if t.startswith("tests/browser/")]
    assert browser == ["tests/browser/test_jupyterlab.py::test_notebook_in_jupyterlab"
                       "[notebooks/00_welcome.ipynb]"], browser


def test_make_test_grades_each_exercise_at_its_smallest_world_size_and_at_5(lanes):
    def sizes(tests):
        found = {}
        for t in tests:
            m = re.match(r"(tests/graders/[^:]+::\w+)\[(\d+)\]$", t)     # test_x[world size]
            if m:
                found.setdefault(m[1], set()).add(int(m[2]))
        return found
    every, quick = sizes(lanes["all"].tests), sizes(lanes["test"].tests)
    assert every and set(quick) == set(every), "every grader runs in make test"
    for grader, have in every.items():
        assert quick[grader] == {min(have), 5 if 5 in have else max(have)}, (grader, have)


def test_make_test_leaves_out_of_the_doctor_only_jobs_that_are_no_rules_test(lanes):
    """make test keeps every doctor test that runs no job (not slow) and, of the jobs, the
    rules' tests (conftest.py); a rule's world-size sweep (tests/doctor/sweeps.py) it keeps
    at 3 ranks only, make test-all at 2 and 4 too."""
    every, quick = lanes["all"], set(lanes["test"].tests)
    doctor = {t for t in every.tests if t.startswith("tests/doctor/")}
    ruled = {r.test for r in every.rules}
    assert doctor - every.slow <= quick, sorted(doctor - every.slow - quick)
    assert doctor & quick & every.slow <= ruled, sorted((doctor & quick & every.slow) - ruled)
    for test in sorted((doctor & ruled) - quick):
        swept = re.match(r"(.+[\[-])([24])\]$", test)      # test[2], test[script.py-4]
        assert swept and f"{swept[1]}3]" in quick, f"{test}: a rule's test make test leaves out"


def test_make_test_keeps_a_hazard_and_its_fixed_twin_of_every_rule_the_doctor_reports(lanes):
    """For each finding kind of labs/doctor/findings.py LESSON, and "real_code": a test
    marked rule(kind, "hazard") and one marked rule(kind, "fixed"), or one marked "both",
    in make test; one test per exit status but 0 and 1 (EXIT_STATUSES); no mark that names
    a kind or role that does not exist."""
    wrong = [f"{r.test}: rule({r.kind!r}, {r.role!r}): no such rule: a kind of "
             f"labs/doctor/findings.py LESSON, 'real_code' or one of {sorted(EXITS)}, and a "
             f"role of {ROLES}" for r in lanes["all"].rules
             if r.kind not in RULES | EXITS or r.role not in ROLES]
    roles = {}
    for r in lanes["test"].rules:
        roles.setdefault(r.kind, set()).add(r.role)
    for kind in sorted(RULES):
        missing = [] if "both" in roles.get(kind, ()) else \
            [role for role in ("hazard", "fixed") if role not in roles.get(kind, ())]
        wrong += [f"make test has no {role} test of {kind!r}: in tests/doctor/, add "
                  f"@pytest.mark.rule({kind!r}, {role!r}) to the cheapest test (fewest ranks, "
                  f"one job) {WHAT[role]} (a pytest.param's marks for one case of a "
                  f"parametrized test)" for role in missing]
    wrong += [f"make test has no test of {kind!r}: in tests/doctor/test_exits.py, add "
              f"@pytest.mark.rule({kind!r}, 'hazard') to the cheapest test that ends so"
              for kind in sorted(EXITS - set(roles))]
    assert not wrong, "\n".join(wrong)
