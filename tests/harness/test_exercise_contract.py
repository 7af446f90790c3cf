"""One source of truth per exercise body: stubs in labs/, bodies in solutions/.

CI proves that stubs and solutions have the same names and signatures, that every stub only
raises NotImplementedError, that every exercise has a grader, and that the graders fail on
the stubs (they pass on the solutions in the main run). The lessons and their exercises
are found from the files (tests/course.py): nothing here names a lesson.
"""
import ast
import importlib
import inspect
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from labs.harness.ranks.exercises import exercises_in
from tests.course import ROOT, exercises, lesson_modules, lessons

ALL = exercises()


def _lab(module):
    return importlib.import_module(f"labs.{module}")


def test_there_are_exercises():
    assert len(ALL) >= 2


@pytest.mark.parametrize("lesson", lessons(), ids=lambda lesson: lesson.notebook.name)
def test_every_notebook_imports_one_lab_module_as_lab(lesson):
    assert len(lesson.modules) == 1, (
        f"{lesson.notebook.name} should import its lab module once as `lab` "
        f"(`import labs.<module> as lab`), found {list(lesson.modules)}")
    module = ROOT / "labs" / lesson.module        # a module, or a package (labs/doctor/)
    assert module.with_suffix(".py").is_file() or (module / "__init__.py").is_file(), \
        f"labs/{lesson.module}.py missing"


def test_every_module_with_exercises_is_a_lesson():
    """A lab module with exercises but no notebook would never be graded."""
    orphans = [p.stem for p in (ROOT / "labs").glob("*.py")
               if p.stem not in lesson_modules() and exercises_in(_lab(p.stem))]
    assert not orphans, (f"labs/{orphans[0]}.py has exercises but no notebook imports it as "
                         f"`lab` (notebooks/NN_<topic>.ipynb: `import labs.{orphans[0]} as lab`)")


@pytest.mark.parametrize("module, name", ALL, ids=[f"{m}.{n}" for m, n in ALL])
def test_stub_and_solution_match(module, name):
    stub = exercises_in(_lab(module))[name].stub
    solution = getattr(importlib.import_module(f"solutions.{module}"), name, None)
    assert solution is not None, f"solutions/{module}.py has no {name}"
    assert inspect.signature(stub) == inspect.signature(solution), \
        f"{name}: labs {inspect.signature(stub)} vs solutions {inspect.signature(solution)}"
    assert_is_a_stub(stub, f"labs.{module}.{name}")


def assert_is_a_stub(stub, where):
    """A docstring (contract + hint) and a single raise pointing to the notebook: nothing
    to copy from."""
    assert (stub.__doc__ or "").strip(), f"{where} needs a docstring (contract + hint)"
    tree = ast.parse(inspect.getsource(stub).lstrip())
    body = tree.body[0].body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    assert len(body) == 1 and isinstance(body[0], ast.Raise), \
        f"{where}: the stub body must only raise (found {len(body)} statements)"
    with pytest.raises(NotImplementedError, match="notebook"):
        stub(*[None] * len(inspect.signature(stub).parameters))


@pytest.mark.parametrize("module", lesson_modules())
def test_solutions_hold_only_exercise_bodies(module):
    path = ROOT / "solutions" / f"{module}.py"
    names = set(exercises_in(_lab(module)))
    if not names:
        return
    assert path.exists(), f"solutions/{module}.py missing"
    solution = importlib.import_module(f"solutions.{module}")
    public = {n for n, f in vars(solution).items() if inspect.isfunction(f)
              and f.__module__ == solution.__name__ and not n.startswith("_")}
    assert public <= names, \
        f"solutions/{module}.py defines functions that are not exercises: {public - names}"


@pytest.mark.parametrize("module, name", ALL, ids=[f"{m}.{n}" for m, n in ALL])
def test_every_exercise_has_a_grader(module, name):
    grader = ROOT / "tests" / "graders" / f"test_{module}.py"
    assert grader.exists(), \
        f"tests/graders/test_{module}.py missing (copy tests/graders/template.py)"
    text = grader.read_text()
    assert f'"{name}"' in text or f"'{name}'" in text, f"no grader calls {name}"


@pytest.mark.all_lane          # the stubs proof: make test-all
def test_graders_fail_on_the_stubs(tmp_path):
    """Run every grader against labs/ (the stubs), at its smallest and largest world size:
    none may pass. (A stub raises before any message, at every world size: the two ends
    prove that no grader passes a body that does nothing, however many ranks it grades.)"""
    report = tmp_path / "graders.xml"
    env = dict(os.environ, P2P_COURSE_SOLUTIONS="0")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/graders", "--impl=labs", "-q",
         "--world-sizes=ends", "-p", "no:cacheprovider", "-p", "no:xdist",
         f"--junitxml={report}"],
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


def test_make_check_knows_the_shipped_doctor_script():
    """make check calls lesson 12's script "not started" while it is as shipped (without
    running the doctor): the hash it compares with is the shipped file's (change both
    together). That the script as shipped fails its grader: test_graders.py."""
    from labs.harness.grading.memory import text_sha256
    from tests.graders import test_doctor
    assert text_sha256(test_doctor.GRADED_FILES[0]) == test_doctor.SHIPPED_SHA256
