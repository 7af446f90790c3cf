"""The templates a maintainer copies to add a lesson work as they are: the lab module is a
valid lesson module, its grader fails on the stub and passes the reference body."""
import ast
import inspect

import pytest

import labs.harness.templates.lesson as lesson
import labs.harness.templates.solution as solution
from labs import launch
from labs.harness.ranks.exercises import exercises_in
from labs.harness.grading import GradeFailure
from tests.graders import template
from tests.harness.test_exercise_contract import assert_is_a_stub

REFERENCE = solution.__name__      # graded as impl: its bodies, by name


def test_the_template_is_a_lesson_module():
    found = exercises_in(lesson)
    assert list(found) == ["swap_with_partner"]
    for name, fn in found.items():
        assert_is_a_stub(fn.stub, f"{lesson.__name__}.{name}")
        assert inspect.signature(fn.stub) == inspect.signature(getattr(solution, name))
    public = {n for n, f in vars(solution).items()
              if inspect.isfunction(f) and f.__module__ == solution.__name__}
    assert public == set(found), "solution.py holds the exercises' bodies, nothing else"
    assert launch(lesson.demo, 3, quiet=True) == [
        "rank 0 swaps with rank 1", "rank 1 swaps with rank 0", "rank 2 has no partner"]


def test_the_template_grader_fails_on_the_stub():
    with pytest.raises(GradeFailure, match="swap_with_partner is not implemented yet.*notebook"):
        template.test_swap_with_partner("labs", 2)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_the_template_grader_passes_the_reference(world_size):
    template.test_swap_with_partner(REFERENCE, world_size)


def test_the_template_grader_catches_a_body_that_keeps_its_own_tensor():
    with pytest.raises(GradeFailure, match=r"\(expected rank 1's tensor\): rank 0 is wrong"):
        template.test_swap_with_partner("tests.harness.wrong_bodies", 2)


def test_the_template_imports_what_a_lesson_may():
    """A lesson stands on the ranks' tools and the command line, below views and claims
    (tests/harness/test_structure.py): the template starts a new lesson on that floor."""
    tree = ast.parse(inspect.getsource(lesson))
    harness = {node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module.startswith("labs")}
    assert harness == {"labs.harness.commands", "labs.harness.ranks.exercises"}
