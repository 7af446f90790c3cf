"""One source of truth per exercise body: stubs in labs/, bodies in solutions/.

CI proves that stubs and solutions have the same names and signatures, that every stub only
raises NotImplementedError, that every exercise has a grader, and that the graders fail on
the stubs (they pass on the solutions in the main run).
"""
import ast
import importlib
import inspect
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
HARNESS = {"__init__", "bench",
           "playground", "schedule"}
LESSON_MODULES = sorted(p.stem for p in (ROOT / "labs").glob("*.py") if p.stem not in HARNESS)


def exercises(module_name):
    module = importlib.import_module(f"labs.{module_name}")
    return {name: fn for name, fn in vars(module).items()
            if callable(fn) and getattr(fn, "is_exercise", False)
            and fn.__module__ == module.__name__}


ALL = [(m, name) for m in LESSON_MODULES for name in exercises(m)]


def test_there_are_exercises():
    assert len(ALL) >= 2


@pytest.mark.parametrize("module, name", ALL, ids=[f"{m}.{n}" for m, n in ALL])
def test_stub_and_solution_match(module, name):
    stub = exercises(module)[name].stub
    solution = getattr(importlib.import_module(f"solutions.{module}"), name, None)
    assert solution is not None, f"solutions/{module}.py has no {name}"
    assert inspect.signature(stub) == inspect.signature(solution), \
        f"{name}: labs {inspect.signature(stub)} vs solutions {inspect.signature(solution)}"
    assert (stub.__doc__ or "").strip(), f"labs.{module}.{name} needs a docstring (contract + hint)"
    # The stub body is a docstring and a single raise: nothing to copy from.
    tree = ast.parse(inspect.getsource(stub).lstrip())
    body = tree.body[0].body
    body = body[1:] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body
    assert len(body) == 1 and isinstance(body[0], ast.Raise), \
        f"labs.{module}.{name}: the stub body must only raise (found {len(body)} statements)"
    with pytest.raises(NotImplementedError, match="notebook"):
        stub(*[None] * len(inspect.signature(stub).parameters))


@pytest.mark.parametrize("module", LESSON_MODULES)
def test_solutions_hold_only_exercise_bodies(module):
    path = ROOT / "solutions" / f"{module}.py"
    if not exercises(module):
        return
    assert path.exists(), f"solutions/{module}.py missing"
    solution = importlib.import_module(f"solutions.{module}")
    public = {n for n, f in vars(solution).items() if inspect.isfunction(f)
              and f.__module__ == solution.__name__ and not n.startswith("_")}
    assert public <= set(exercises(module)), \
        f"solutions/{module}.py defines functions that are not exercises: {public - set(exercises(module))}"


@pytest.mark.parametrize("module, name", ALL, ids=[f"{m}.{n}" for m, n in ALL])
def test_every_exercise_has_a_grader(module, name):
    grader = ROOT / "tests" / f"test_{module}.py"
    assert grader.exists(), f"tests/test_{module}.py missing"
    text = grader.read_text()
    assert "pytest.mark.grader" in text
    assert f'"{name}"' in text or f"'{name}'" in text, f"no grader calls {name}"


def test_graders_fail_on_the_stubs(tmp_path):
    """Run every grader against labs/ (the stubs): none may pass."""
    report = tmp_path / "graders.xml"
    env = dict(os.environ, P2P_COURSE_SOLUTIONS="0")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "grader", "--impl=labs", "tests", "-q",
         "-p", "no:cacheprovider", "-p", "no:xdist", f"--junitxml={report}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = {f"{c.get('classname')}::{c.get('name')}":
               "failed" if c.find("failure") is not None or c.find("error") is not None
               else "skipped" if c.find("skipped") is not None else "passed" for c in cases}
    assert outcome, proc.stdout[-2000:]
    passed = [t for t, o in outcome.items() if o == "passed"]
    assert not passed, f"graders that pass on the unsolved stubs: {passed}"
    # and they say why: not implemented yet, pointing at the notebook
    assert "not implemented yet" in proc.stdout
