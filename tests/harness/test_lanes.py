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
                       "[notebooks/00_welcome.ipynb]"], browser


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


def test_make_test_runs_each_doctor_sweep_at_one_world_size(lanes):
    """A doctor test swept over world sizes (tests/doctor/sweeps.py) runs once in make test,
    at every size in make test-all."""
    def sizes(tests):
        found = {}
        for t in tests:
            m = re.match(r"(tests/doctor/[^:]+::\w+)\[(?:(.+)-)?(\d)\]$", t)    # [script-]nproc
            if m and "sweep" in SWEPT.get(m[1].split("::")[1], ""):
                found.setdefault((m[1], m[2]), set()).add(int(m[3]))
        return found
    every, quick = sizes(lanes["all"][0]), sizes(lanes["test"][0])
    assert every and set(quick) == set(every), "every doctor sweep runs in make test"
    for sweep, have in every.items():
        assert have == {2, 3, 4} and quick[sweep] == {3}, (sweep, have, quick[sweep])


SWEPT = {"test_ring_attention_written_for_gpus_is_clean": "sweep",
         "test_megatron_style_neighbour_exchange_is_clean": "sweep",
         "test_each_fixed_twin_gets_a_clean_bill": "sweep"}
