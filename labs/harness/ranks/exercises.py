"""How exercise stubs and reference solutions meet.

An exercise is a function in a lab module whose body raises `ExerciseNotSolved` (a
NotImplementedError) made by `todo(...)`, marked with `@exercise`. You replace the body
with your own. The reference body lives in
`solutions/<same module>.py` under the same name (one source of truth per body).

When the environment variable P2P_COURSE_SOLUTIONS=1 is set, a marked stub calls the
reference solution instead. P2P_COURSE_SOLUTIONS=name1,name2 does it for those exercises only
(launch_exercise uses it: an unsolved exercise runs its reference, your other exercises run
your code). The notebook test run sets it (the committed notebook outputs
are the solutions' outputs); `make lab` does not, so in JupyterLab you run your own code.
`launch` forwards the variable to its workers at call time.

"Not solved yet" is data, not a sentence: `ExerciseNotSolved` carries an `Unsolved`
(exercise, file, section), which a worker sends back as such (`Failed.unsolved`,
`WorkerError.unsolved`); the notebooks' fallback and the grade sheet read those fields.
"""
import ast
import functools
import importlib
import inspect
import json
import os
import sys
import textwrap
from dataclasses import asdict, dataclass

from labs.harness import COURSE_ROOT

SOLUTIONS_ENV = "P2P_COURSE_SOLUTIONS"
# A folder where an exercise that is not solved yet leaves a note (JSON: its Unsolved),
# for a parent that only sees a process's exit: a torchrun job (labs.views.jobs).
NOTES_ENV = "P2P_COURSE_UNSOLVED_NOTES"


def solutions_enabled() -> bool:
    return os.environ.get(SOLUTIONS_ENV, "") == "1"


def solution_wanted(name: str) -> bool:
    """Does exercise `name` run its reference body: all of them (P2P_COURSE_SOLUTIONS=1),
    or this one among a comma-separated list of names?"""
    value = os.environ.get(SOLUTIONS_ENV, "")
    return value == "1" or name in value.split(",")


def exercise(stub):
    """Mark `stub` as an exercise; see the module docstring."""
    solution_module = "solutions." + stub.__module__.rsplit(".", 1)[-1]

    @functools.wraps(stub)
    def run(*args, **kwargs):
        if solution_wanted(stub.__name__):
            solution = getattr(importlib.import_module(solution_module), stub.__name__)
            return solution(*args, **kwargs)
        try:
            return stub(*args, **kwargs)
        except ExerciseNotSolved as exc:
            _leave_note(exc.unsolved)
            raise

    run.is_exercise = True
    run.stub = stub
    run.solution_module = solution_module
    return run


@dataclass(frozen=True)
class Unsolved:
    """Which exercise is not solved yet: its name, its file (relative to the course) and
    the notebook section that explains it."""

    exercise: str          # "ring_all_reduce"
    file: str              # "labs/ring.py"
    section: str           # "notebook 05, 'Exercise 2: ...'"

    def as_dict(self) -> dict:
        return asdict(self)


class ExerciseNotSolved(NotImplementedError):
    """What a stub raises (`raise todo(...)`): `.unsolved` says which exercise, where."""

    def __init__(self, exercise: str, file: str, section: str):
        self.unsolved = Unsolved(exercise, file, section)
        super().__init__(f"exercise {exercise} in {file} is not solved yet: write its body "
                         f"(see {section}), then grade it with `make check`.")

    def __reduce__(self):
        return type(self), (self.unsolved.exercise, self.unsolved.file, self.unsolved.section)


def todo(where: str) -> ExerciseNotSolved:
    """The exception a stub raises: which exercise, in which file, and where the lesson
    explains it."""
    stub = sys._getframe(1).f_code      # the stub that raises it
    file = os.path.relpath(stub.co_filename, COURSE_ROOT)
    return ExerciseNotSolved(stub.co_name, file, where)


def unsolved_of(exc: BaseException | None) -> Unsolved | None:
    """The Unsolved that `exc` carries if it is a stub's ExerciseNotSolved, else None. Only
    the exception itself counts: code that catches a stub's exception and raises another
    one has made its own error."""
    return exc.unsolved if isinstance(exc, ExerciseNotSolved) else None


def _leave_note(unsolved: Unsolved) -> None:
    folder = os.environ.get(NOTES_ENV)
    if folder and os.path.isdir(folder):
        with open(os.path.join(folder, f"{os.getpid()}-{unsolved.exercise}.json"), "w") as f:
            json.dump(unsolved.as_dict(), f)


def notes_in(folder) -> list[Unsolved]:
    """The exercises that raised `ExerciseNotSolved` in processes started with
    NOTES_ENV=folder, by name (each once)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                note = Unsolved(**json.load(f))
            found.setdefault(note.exercise, note)
    return list(found.values())


def exercises_in(module) -> dict:
    """The exercises `module` defines (not those it imports), by name, in file order."""
    return {name: fn for name, fn in vars(module).items()
            if getattr(fn, "is_exercise", False) and fn.__module__ == module.__name__}


def untouched(stub) -> bool:
    """Is `stub`'s body still only its docstring and `raise todo(...)`? Then calling it
    raises ExerciseNotSolved before anything else happens, and a grader need not run the
    reference first (the grade sheet of untouched stubs comes in seconds)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(stub)))
    except (OSError, TypeError, SyntaxError):
        return False
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Raise) and \
        isinstance(body[0].exc, ast.Call) and ast.unparse(body[0].exc.func) == "todo"
