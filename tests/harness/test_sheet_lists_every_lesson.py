"""make check's sheet on the course as shipped (every exercise an untouched stub, no workers
needed): every lesson with a lab module has its row, and under it each of its exercises,
`not started`, in the lab module's order. A lesson the sheet forgets (a new one, say) fails here."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.check import SCRIPT_EXERCISES
from tests.course import ROOT, exercises, lessons

FIRST = re.compile(r"^(\d\d) (\w+)\s+(not started|solved|FAILING|\w+)\s+(\w+)")
MORE = re.compile(r"^\s+(not started|solved|FAILING|\w+)\s+(\w+)")


def _sheet_rows(out: str) -> dict[str, list[tuple[str, str]]]:
    """{"13 layouts": [("not started", "pp_dp_step")], ...} from the sheet after its header."""
    rows: dict[str, list[tuple[str, str]]] = {}
    lesson = None
    for line in out.split("grade sheet:", 1)[1].splitlines()[1:]:
        if first := FIRST.match(line):
            lesson = f"{first[1]} {first[2]}"
            rows[lesson] = [(first[3], first[4])]
        elif (more := MORE.match(line)) and lesson:
            rows[lesson].append((more[1], more[2]))
        elif not line.strip():
            break
    return rows


@pytest.mark.slow
def test_the_sheet_lists_every_lesson_and_its_exercises_not_started(tmp_path):
    env = dict(os.environ, P2P_COURSE_SOLUTIONS="0")
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/graders", "--impl=labs",
                          f"--remember={tmp_path / 'grades.json'}", "-qq", "--tb=no", "-rN",
                          "-p", "no:xdist", "--continue-on-collection-errors",
                          "-o", "console_output_style=classic", "-p", "no:nbval",
                          "-o", "addopts=-p no:cacheprovider"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    found = _sheet_rows(run.stdout)
    expected = {f"{lesson.number} {lesson.module}":
                [("not started", name) for m, name in exercises() if m == lesson.module] +
                [("not started", name) for name in SCRIPT_EXERCISES.get(lesson.module, ())]
                for lesson in lessons() if lesson.module}
    expected = {lesson: names for lesson, names in expected.items() if names}
    assert found == expected, run.stdout[-4000:]
    assert "13 layouts" in found        # the newest lesson, by name
