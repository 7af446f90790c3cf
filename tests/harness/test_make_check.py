"""A real `make check` on a copy of the course, as a learner runs it: lesson 05's first two
exercises solved (their reference bodies copied into the copy's labs/ring.py) and graded, then
graded again from memory; a hang stopped at the first world size at the learner's line; each
problem once with its world sizes; a module that does not load fails its own lesson only.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from labs.harness.grading.run import HANG_SECONDS
from tests.course import ROOT

def _solve(course: Path, module: str, names: list[str]):
    """Copy the reference bodies of `names` into the copy's labs/<module>.py (the solution's
    private helpers and imports go at the end of the file, as a learner might put them; what
    it imports from solutions/, e.g. the ring, comes from labs/ as in a learner's file)."""
    lab_path, ref_path = course / "labs" / f"{module}.py", course / "solutions" / f"{module}.py"
    lab, ref = lab_path.read_text().splitlines(), ref_path.read_text()
    ref_tree, ref_lines = ast.parse(ref), ref.splitlines()
    defs = {n.name: n for n in ref_tree.body if isinstance(n, ast.FunctionDef)}
    lab_defs = {n.name: n for n in ast.parse("\n".join(lab)).body
                if isinstance(n, ast.FunctionDef)}
    for name in sorted(names, key=lambda n: -lab_defs[n].lineno):   # bottom up
        stub, body = lab_defs[name], defs[name]
        lab[stub.lineno - 1:stub.end_lineno] = ref_lines[body.lineno - 1:body.end_lineno]
    extra = [ref_lines[n.lineno - 1:n.end_lineno] for n in ref_tree.body
             if isinstance(n, (ast.Import, ast.Assign)) or (
                 isinstance(n, ast.ImportFrom) and not n.module.startswith("solutions")) or (
                 isinstance(n, ast.FunctionDef) and n.name.startswith("_"))]
    lab += ["", ""] + [line for block in extra for line in block]
    lab_path.write_text("\n".join(lab) + "\n")


# The loop is the same at any world size: graded here at 1 and 2 (make check grades all
# eight). At 1 and 3 the first test took 140 CPU-seconds, at 1 and 2 it takes 45.
SIZES = (1, 2)


def _check(course: Path, grades: Path, *args, sizes=SIZES) -> subprocess.CompletedProcess:
    """make check's pytest command, on the copy."""
    env = dict(os.environ, P2P_COURSE_SOLUTIONS="0")
    return subprocess.run([sys.executable, "-m", "pytest", "tests/graders", "--impl=labs",
                           f"--remember={grades}", "-qq", "--tb=no", "-rN", "-p", "no:xdist",
                           f"--world-sizes={','.join(map(str, sizes))}",
                           "--continue-on-collection-errors", "-o", "console_output_style=classic",
                           "-p", "no:nbval", "-o", "addopts=-p no:cacheprovider", *args],
                          cwd=course, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_make_check_grades_what_changed_and_remembers_the_rest(tmp_path, no_leftover_workers):
    course = tmp_path / "course"
    shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "test-artifacts", "yours", ".ipynb*"))
    grades = tmp_path / "grades.json"
    _solve(course, "ring", ["ring_reduce_scatter", "ring_all_reduce"])

    first = _check(course, grades, "--lesson=05")
    out = first.stdout
    assert first.returncode == 0, out[-3000:] + first.stderr[-3000:]
    assert re.search(r"05 ring\s+solved\s+ring_reduce_scatter\n", out), out
    assert re.search(r"\n\s+solved\s+ring_all_reduce\n", out), out
    assert re.search(r"\n\s+not started\s+pipelined_ring_all_reduce\n", out), out
    assert "1 on untouched stubs" not in out and "on untouched stubs" in out
    assert " F" not in out and "FFFF" not in out and "Error" not in out
    assert "06 gradients" not in out

    again = _check(course, grades, "--lesson=05")
    assert again.returncode == 0
    assert re.search(r"\n\s+solved\s+ring_all_reduce  \[remembered\]\n", again.stdout), \
        again.stdout
    assert "0 grader run(s) to do" in again.stdout

    _a_change_regrades_what_it_touches(course, grades)
    _calling_the_reference_is_no_solution(course, grades)


def _a_change_regrades_what_it_touches(course, grades) -> None:
    """Lesson 06's ring averaging, written to use the ring: graded, solved on a solved ring;
    editing the ring regrades the ring and what uses it, nothing else."""
    _solve(course, "gradients", ["average_gradients_ring"])
    third = _check(course, grades, "--lesson=06")
    assert re.search(r"\n\s+solved\s+average_gradients_ring\n", third.stdout), third.stdout
    ring = course / "labs" / "ring.py"
    ring.write_text(ring.read_text().replace("def ring_all_reduce(tensor):",
                                             "def ring_all_reduce(tensor):  # edited", 1))
    fourth = _check(course, grades)
    # ring_all_reduce and average_gradients_ring, each at every world size graded here
    runs = 2 * len(SIZES)
    assert f"{runs} grader run(s) to do" in fourth.stdout, fourth.stdout


def _calling_the_reference_is_no_solution(course, grades) -> None:
    """A body that calls the reference solution is no solution: the sheet says whose code sent."""
    ring = course / "labs" / "ring.py"
    ring.write_text(ring.read_text().replace(
        "def pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):",
        "def pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):\n"
        "    from solutions.ring import pipelined_ring_all_reduce as theirs\n"
        "    return theirs(tensor, segment_bytes)\n\n\n"
        "def _was_pipelined_ring_all_reduce(tensor, segment_bytes=4 << 20):", 1))
    fifth = _check(course, grades, "--lesson=05")
    assert re.search(r"FAILING\s+pipelined_ring_all_reduce: 1 problem, below\n\s+labs/ring\.py:\d+: "
                     r".*communicated through solutions/ring\.py:\d+ \(\w+\), the course's own "
                     r"code", fifth.stdout), fifth.stdout


# -- what make check LESSON=04 says of a hang, of two problems, of a file that does not load --

def _copy(tmp_path) -> Path:
    course = tmp_path / "course"
    shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "test-artifacts", "yours", ".ipynb*"))
    return course


def _write_exchange_batched(course: Path, body: str) -> int:
    """Give labs/deadlocks.py's exchange_batched this body; the line number of its first
    line that holds "dist." (where a hang sits)."""
    path = course / "labs" / "deadlocks.py"
    text = path.read_text()
    start = text.index('"""', text.index("def exchange_batched(")) + 3
    start = text.index('"""', start) + 4          # after the docstring's closing line
    end = text.index("\n\n@exercise\ndef exchange_parity_ordered")
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    text = text[:start] + body + "\n" + text[end:]
    path.write_text(text)
    lines = text.splitlines()
    first = text[:start].count("\n")
    return next(i + 1 for i in range(first, len(lines)) if "dist." in lines[i])


@pytest.mark.slow
def test_make_check_stops_at_the_first_hang_and_names_your_line(tmp_path, no_leftover_workers):
    """Head-to-head blocking sends: one run hangs, the larger world sizes are not run (one
    hang is enough to fix), and each rank's entry starts with the line it sits at."""
    course = _copy(tmp_path)
    line = _write_exchange_batched(course, """
        received = torch.empty_like(tensor)
        dist.send(tensor, dst=peer)
        dist.recv(received, src=peer)
        return received
    """)
    started = time.perf_counter()
    run = _check(course, tmp_path / "grades.json", "--lesson=04", sizes=(2, 3, 4))
    took = time.perf_counter() - started
    out = run.stdout
    assert run.returncode == 1, out[-3000:] + run.stderr[-3000:]
    assert re.search(r"04 deadlocks\s+FAILING\s+exchange_batched: 1 problem, below\n", out), out
    at = " " * 18 + f"labs/deadlocks.py:{line}: "
    assert f"{at}rank 0 blocked in send(to 1, tag 0, 10 x float32)\n" in out, out
    assert f"{at}rank 1 blocked in send(to 0, tag 0, 10 x float32)\n" in out, out
    assert f"Nothing moved for {HANG_SECONDS:g} s" in out
    assert "at world size 2 (not graded at 3, 4: a hang stops its grader" in out, out
    # said the moment it is found (your line first), then once on the sheet
    assert "exchange_batched  FAILING at world size 2; 2 run(s) not graded" in out, out
    sheet = out[out.index("grade sheet"):]
    assert sheet.count("hung (world_size=") == 1, "the hang once, at one world size"
    # one launch, told after HANG_SECONDS of nothing moving: not 3 launches, not gloo's timeout
    assert took < 60, f"make check took {took:.0f} s"
    again = _check(course, tmp_path / "grades.json", "--lesson=04", sizes=(2, 3, 4))
    assert "0 grader run(s) to do" in again.stdout, again.stdout     # all three remembered
    assert again.stdout.count("hung (world_size=") == 1


@pytest.mark.slow
def test_make_check_says_each_problem_once_and_stops_at_the_first_failure(tmp_path,
                                                                           no_leftover_workers):
    """A batch never waited for: two problems (the send, the receive), each once, your file
    and line first, then the world size it showed at; a failure ends the exercise's grading,
    as a hang does: the larger world size is not graded, and the sheet says so."""
    course = _copy(tmp_path)
    _write_exchange_batched(course, """
        received = torch.empty_like(tensor)
        ops = [dist.P2POp(dist.isend, tensor, peer), dist.P2POp(dist.irecv, received, peer)]
        dist.batch_isend_irecv(ops)
        return received
    """)
    out = _check(course, tmp_path / "grades.json", "--lesson=04", sizes=(2, 3)).stdout
    assert re.search(r"FAILING\s+exchange_batched: 2 problems, each once below\n", out), out
    problems = re.findall(r"^ {18}(labs/deadlocks\.py:\d+: rank 0 returned with a (send|receive) "
                          r"of 10 x float32 (?:to|from) rank 1 never waited for.*)\n"
                          r" {22}at world size 2", out, re.M)
    assert sorted(kind for _, kind in problems) == ["receive", "send"], out
    assert "(not graded at 3: a failure stops its grader" in out, out
    assert "more problem" not in out and "more run(s)" not in out


@pytest.mark.slow
def test_make_check_grades_the_fast_world_sizes_first_and_says_a_failure_at_once(
        tmp_path, no_leftover_workers):
    """Right at every world size but 4: graded at 2 and 5 first ("right at 2 and 5; grading 3,
    4, 6 ..."), then 3, then 4, where the failure is said at once with your line, before the
    sheet; 6 is not graded, and the exercise is not remembered as solved."""
    course = _copy(tmp_path)
    _write_exchange_batched(course, """
        if dist.get_world_size() == 4:
            return tensor.clone()          # wrong at 4 ranks only
        received = torch.empty_like(tensor)
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                        dist.P2POp(dist.irecv, received, peer)])
        for work in works:
            work.wait()
        return received
    """)
    grades = tmp_path / "grades.json"
    run = _check(course, grades, "--lesson=04", sizes=(2, 3, 4, 5, 6))
    out = run.stdout
    assert run.returncode == 1, out[-3000:] + run.stderr[-3000:]
    right = out.index("exchange_batched  right at 2 and 5; grading 3, 4, 6 ...\n")
    failing = re.search(r"exchange_batched  FAILING at world size 4; 1 run\(s\) not graded "
                        r"\(a failure ends its grading\), [\d.]+ s\n {6}labs/deadlocks\.py:\d+: ", out)
    assert failing and right < failing.start() < out.index("grade sheet"), out
    assert "(not graded at 6: a failure stops its grader" in out, out
    again = _check(course, grades, "--lesson=04", sizes=(2, 3, 4, 5, 6)).stdout
    assert "0 grader run(s) to do" in again, again
    assert re.search(r"FAILING\s+exchange_batched", again), again


@pytest.mark.slow
def test_a_module_that_does_not_load_fails_its_own_lesson_only(tmp_path):
    """A syntax error in labs/deadlocks.py: lesson 04's exercises fail, saying so; lesson
    08 (its module imports labs.deadlocks) waits for it; the count of exercises stays."""
    course = _copy(tmp_path)
    grades = tmp_path / "grades.json"
    count = re.search(r"of (\d+) exercises", _check(course, grades).stdout)[1]
    deadlocks = course / "labs" / "deadlocks.py"
    good = deadlocks.read_text()
    deadlocks.write_text(good + "\ndef broken(:\n    pass\n")
    out = _check(course, grades).stdout
    assert f"of {count} exercises" in out, out
    assert re.search(r"04 deadlocks\s+FAILING\s+exchange_batched: labs/deadlocks\.py does not "
                     r"load: SyntaxError", out), out
    assert not re.search(r"08 snippets\s+FAILING", out) and \
        re.search(r"08 snippets\s+waiting\s+\w+: needs labs/deadlocks\.py, which does not load",
                  out), out
    assert "LESSON=04" in out.splitlines()[-1], out.splitlines()[-1]
    deadlocks.write_text(good)
    fixed = _check(course, grades)
    assert f"of {count} exercises" in fixed.stdout and "does not load" not in fixed.stdout
