"""Everything an exercise must have, checked in the fast lane (`make test-fast`, no workers).

What can be found from the files is found (tests/course.py: the lessons, their modules, their
exercises; labs/harness/grading/lessons.py: the lessons' own functions a body may not call).
What a maintainer writes by hand for each exercise is checked here, and each failure says
what to add where (README, "Adding an exercise"). The stub and its reference body are
checked beside it (tests/harness/test_exercise_contract.py).
"""
import ast
import importlib
import inspect
import json
import re

import pytest

from labs.harness.commands.rules import heading_text
from labs.harness.grading import lessons
from labs.harness.grading.methods import METHODS
from tests import mutation
from tests.course import ROOT, exercises, lessons as course_lessons
from tests.harness import catalogue

ALL = exercises()
IDS = [f"{m}.{n}" for m, n in ALL]


def _grader_tests(module: str) -> set[str]:
    path = ROOT / "tests" / "graders" / f"test_{module}.py"
    return {node.name for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def _grader_test(module: str, name: str) -> str:
    """The grader test of an exercise: test_<name>, or the one tests/mutation.py names."""
    special = mutation.SPECIAL.get(f"{module}.{name}")
    return special[1] if special else f"test_{name}"


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_a_grader_test_named_for_it(module, name):
    assert _grader_test(module, name) in _grader_tests(module), (
        f"tests/graders/test_{module}.py needs `def test_{name}(...)` (copy one from "
        f"tests/graders/template.py); a test of another name grades it only if SPECIAL in "
        f"tests/mutation.py maps \"{module}.{name}\" to it")


def _skip_unless_graded_by_grade(module: str):
    """A grader through grade() (launch, your body beside its reference) has a Method and
    a catalogue; one that grades otherwise (lesson 11's, under torchrun) has its own."""
    grader = (ROOT / "tests" / "graders" / f"test_{module}.py").read_text()
    if not re.search(r"\bgrade\(", grader):
        pytest.skip(f"tests/graders/test_{module}.py does not grade through grade()")


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_its_method(module, name):
    """A grader that launches through grade() compares the body with its Method."""
    _skip_unless_graded_by_grade(module)
    assert f"{module}.{name}" in METHODS, (
        f"add `\"{module}.{name}\": Method(\"<the method, in the words a failure will "
        f"quote>\", ...)` to METHODS in labs/harness/grading/methods.py")


def test_every_method_is_an_exercise():
    stale = set(METHODS) - set(IDS)
    assert not stale, (f"METHODS in labs/harness/grading/methods.py names {sorted(stale)}, "
                       f"which no lab module defines as an @exercise: remove or rename it")


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_bodies_in_the_catalogue(module, name):
    """At least one learner body proves the grader, wrong (it must fail, saying why) or
    right in another style (it must pass)."""
    _skip_unless_graded_by_grade(module)
    test = _grader_test(module, name)
    graded = [entry for entry in catalogue.WRONG + catalogue.RIGHT
              if getattr(entry[0], "__name__", "") == test
              and getattr(entry[0], "__module__", "").endswith(f"test_{module}")]
    assert graded, (
        f"no learner body grades {module}.{name}: write a wrong one in "
        f"tests/graders/bodies/{module}/__init__.py and add `(test_{module}.{test}, <world "
        f"size>, \"{module}:<body>\", \"<what the failure must say>\")` to WRONG in "
        f"tests/harness/catalogue/{module}.py (a new lesson: create it, as ring.py)")


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_the_readme_lists_it(module, name):
    number = next(lesson.number for lesson in course_lessons() if lesson.module == module)
    row = re.search(rf"^\| {number} `{module}` \|(.*)\|$", (ROOT / "README.md").read_text(), re.M)
    assert row and f"`{name}`" in row[1], (
        f"README.md, \"Exercises and grading\": the row `| {number} `{module}` | ... |` "
        f"must list `{name}`")


def test_the_lessons_functions_are_the_courses_not_yours(tmp_path):
    """lessons.scan(): a function a notebook names and that communicates is the course's;
    a helper only its own module calls (yours), an exercise, and what a solution imports
    are not."""
    for folder in ("labs", "solutions", "notebooks"):
        (tmp_path / folder).mkdir()
    (tmp_path / "labs" / "demo_lesson.py").write_text(
        "import torch.distributed as dist\n"
        "def shown(t):\n    dist.send(t, 1)\n"
        "def called_by_shown_too(t):\n    dist.recv(t, 0)\n"
        "def table_entry(t):\n    dist.all_reduce(t)\n"
        "TABLE = {'x': table_entry}\n"
        "def yours(t):\n    dist.send(t, 1)\n"
        "def helper(t):\n    dist.send(t, 1)\n"
        "@exercise\ndef graded(t):\n    yours(t)\n")
    (tmp_path / "solutions" / "demo_lesson.py").write_text(
        "from labs.demo_lesson import helper\n")
    (tmp_path / "notebooks" / "01_demo.ipynb").write_text(
        '{"cells": [{"source": ["lab.shown(x); lab.helper(x); lab.graded(x)"]}]}')
    (tmp_path / "labs" / "demo_lesson.py").write_text(
        (tmp_path / "labs" / "demo_lesson.py").read_text().replace(
            "    dist.send(t, 1)\ndef called", "    dist.send(t, 1)\n    called_by_shown_too(t)\n"
            "def called", 1))
    assert lessons.scan(tmp_path) == {
        "demo_lesson": ("shown", "called_by_shown_too", "table_entry")}


def test_the_scan_is_remembered_only_while_its_files_are_unchanged(tmp_path):
    """A grader's fork server scans once and its ranks reuse the result (preload.py): an edit
    of a lab file, a notebook or a user of the course must be scanned again. (Each edit here
    changes the file's size too: two writes within a clock tick can share an mtime.)"""
    for folder in ("labs", "solutions", "notebooks"):
        (tmp_path / folder).mkdir()
    lab = tmp_path / "labs" / "demo_lesson.py"
    lab.write_text("import torch.distributed as dist\ndef shown(t):\n    dist.send(t, 1)\n")
    notebook = tmp_path / "notebooks" / "01_demo.ipynb"
    notebook.write_text('{"cells": [{"source": ["lab.not_a_function_here(x)"]}]}')
    assert lessons.scan(tmp_path) == {}
    notebook.write_text('{"cells": [{"source": ["lab.shown(x)"]}]}')      # named now
    assert lessons.scan(tmp_path) == {"demo_lesson": ("shown",)}
    lab.write_text("import torch.distributed as dist\ndef shown(t):\n    return t\n")
    assert lessons.scan(tmp_path) == {}, "an edit of the lab file is scanned again"


def test_the_lessons_functions_found_in_the_course():
    found = lessons.scan()
    assert "ring_shift" in found["collectives"] and "snippet3_run" in found["snippets"]
    assert not {(m, name) for m, names in found.items() for name in names} & set(ALL)


def test_every_body_the_catalogue_names_exists():
    """A body renamed or moved without its catalogue line fails here, not in make test-all."""
    from tests.harness.catalogue.messages import BODIES
    missing = []
    for entry in catalogue.WRONG + catalogue.RIGHT:
        module, name = entry[2].split(":")
        if module == "scripts" or not name:       # whole files: lesson 12's scripts, a module
            continue
        if not hasattr(importlib.import_module(f"{BODIES}.{module}"), name):
            missing.append(entry[2])
    assert not missing, (f"the catalogue (tests/harness/catalogue/) names bodies that "
                         f"tests/graders/bodies/ does not define: {missing[:5]}")


def test_one_exercises_bodies_are_listed_together(capsys):
    """`python -m tests.harness.catalogue ring.ring_all_reduce`: each at its file:line."""
    from tests.harness.catalogue.__main__ import main
    assert main(["ring.ring_all_reduce"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 5 and all("test_ring_all_reduce" in line for line in lines[:-1])
    assert all((ROOT / line.split()[3].rsplit(":", 1)[0]).is_file() for line in lines[:-1])


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_its_stub_points_at_a_section_that_exists(module, name):
    """The stub's todo("notebook NN, '<heading>'") names a heading of that notebook: the
    place an unsolved exercise sends you to, and where the notebook states its contract."""
    stub = inspect.getsource(getattr(importlib.import_module(f"labs.{module}"), name))
    where = re.search(r"todo\(\"notebook (\d\d),[^']*'([^']+)'\"\)", stub)
    assert where, f"labs/{module}.py: {name} must raise todo(\"notebook NN, '<its heading>'\")"
    notebook = next((ROOT / "notebooks").glob(f"{where[1]}_*.ipynb"))
    headings = {heading_text(line) for cell in json.loads(notebook.read_text())["cells"]
                if cell["cell_type"] == "markdown"
                for line in "".join(cell["source"]).splitlines() if line.startswith("#")}
    assert heading_text(where[2]) in headings, (
        f"{notebook.name} has no heading '{where[2]}' (labs/{module}.py, {name}'s todo): add "
        f"the exercise's section, `### {where[2]}`, with its contract and a launch_exercise cell")


@pytest.mark.parametrize("module, name", ALL, ids=IDS)
def test_the_notebook_states_the_stubs_signature(module, name):
    """The notebook's exercise section names the function as the stub defines it, same
    parameters in the same order (the contract's prose is the notebook's and the docstring's,
    each in its place; what a body is called with must be one thing)."""
    notebook = next(lesson.notebook for lesson in course_lessons() if lesson.module == module)
    text = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]
                     if c["cell_type"] == "markdown")
    stub = getattr(importlib.import_module(f"labs.{module}"), name)
    params = list(inspect.signature(stub).parameters)
    stated = [[p.split("=")[0].strip() for p in args.split(",") if p.strip()]
              for args in re.findall(rf"`{name}\(([^`)]*)\)`", text)]
    assert params in stated, (
        f"{notebook.name} should name the exercise as `{name}({', '.join(params)})` "
        f"(labs/{module}.py's stub); it says {['(' + ', '.join(s) + ')' for s in stated]}")
