"""The two lanes (conftest.py's --lane, pytest.ini's all_lane mark): `make test` keeps what a
reader needs, `make test-all` keeps everything, and nothing leaves both."""
import re
import subprocess
import sys

import pytest

from tests.course import ROOT

# What the lanes differ on: the graders, the browser, the catalogue and the stubs proof.
PATHS = ["tests/graders", "tests/browser", "tests/harness/test_graders.py",
         "tests/harness/test_exercise_contract.py", "tests/lessons/test_algorithms.py",
         "tests/lessons/test_snippets.py", "tests/doctor"]

# Two collections in subprocesses, ~25 s each on a loaded machine: a maintainers' check.
pytestmark = [pytest.mark.slow, pytest.mark.all_lane]


def collected(lane):
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", f"--lane={lane}",
                           "-p", "no:nbval", "-p", "no:cacheprovider", "-o", "addopts=", *PATHS],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if "::" in line], proc.stdout


@pytest.fixture(scope="module")
def lanes():
    return {lane: collected(lane) for lane in ("test", "all")}


def test_test_all_runs_everything_and_make_test_a_part_of_it(lanes):
    (every, said), (quick, _) = lanes["all"], lanes["test"]
    assert "deselected" not in said, "make test-all leaves nothing out"
    assert set(quick) < set(every)


def test_make_test_leaves_out_the_catalogue_the_stubs_proof_and_all_but_one_browser_test(lanes):
    quick, _ = lanes["test"]
    left_in = [t for t in quick if re.search(
        r"test_a_wrong_body|test_a_correct_body|test_ring_job_grader|fails_on_its_stub"
        r"|test_graders_fail_on_the_stubs|test_graders_reject_wrong_bodies"
        r"|test_graders_accept_other_correct_styles|test_grader_rejects_half_fixed_bodies", t)]
    assert not left_in, left_in
    browser = [t for t in quick if t.startswith("tests/browser/")]
    assert browser == ["tests/browser/test_jupyterlab.py::test_notebook_in_jupyterlab"
                       "[notebooks/00_welcome.ipynb]",
                       "tests/browser/test_predictions.py::"
                       "test_no_answer_on_the_page_before_the_pick[notebooks/00_welcome.ipynb]"
                       ], browser


def test_make_test_grades_each_exercise_at_its_smallest_world_size_and_at_5(lanes):
    def sizes(tests):
        found = {}
        for t in tests:
            m = re.match(r"(tests/graders/[^:]+::\w+)\[(\d+)\]$", t)     # test_x[world size]
            if m:
                found.setdefault(m[1], set()).add(int(m[2]))
        return found
    every, quick = sizes(lanes["all"][0]), sizes(lanes["test"][0])
    assert every and set(quick) == set(every), "every grader runs in make test"
    for grader, have in every.items():
        assert quick[grader] == {min(have), 5 if 5 in have else max(have)}, (grader, have)


def test_make_test_leaves_out_of_the_doctor_only_its_sweeps_beyond_3_ranks(lanes):
    """Every doctor test make test leaves out is a world-size sweep's run at 2 or 4 ranks
    (tests/doctor/sweeps.py), whose run at 3 ranks make test keeps, or a run that lasts its
    whole deadline (its name says so), while make test keeps a deadline shorter than start-up."""
    every, quick = set(lanes["all"][0]), set(lanes["test"][0])
    left_out = sorted(t for t in every - quick if t.startswith("tests/doctor/")
                      and not re.search(r"_deadline(_|$)", t.split("::")[-1]))
    assert any("test_a_deadline_shorter_than_start_up" in t for t in quick)
    assert left_out, "the doctor's sweeps run at 2 and 4 ranks in make test-all only"
    for test in left_out:
        swept = re.match(r"(.+[\[-])([24])\]$", test)      # test[2], test[script.py-4]
        assert swept and f"{swept[1]}3]" in quick, test
