"""How exercise stubs and reference solutions meet.

An exercise is a function in a lab module whose body raises NotImplementedError, marked
with `@exercise`. You replace the body with your own. The reference body lives in
`solutions/<same module>.py` under the same name (one source of truth per body).

When the environment variable P2P_COURSE_SOLUTIONS=1 is set, a marked stub calls the
reference solution instead. P2P_COURSE_SOLUTIONS=name1,name2 does it for those exercises only
(launch_exercise uses it: an unsolved exercise runs its reference, your other exercises run
your code). The notebook test run sets it (the committed notebook outputs
are the solutions' outputs); `make lab` does not, so in JupyterLab you run your own code.
`launch` forwards the variable to its workers at call time.
"""
import functools
import importlib
import os
import sys

SOLUTIONS_ENV = "P2P_COURSE_SOLUTIONS"


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
        return stub(*args, **kwargs)

    run.is_exercise = True
    run.stub = stub
    run.solution_module = solution_module
    return run


def todo(where: str):
    """The exception a stub raises: which exercise, in which file, and where the lesson
    explains it."""
    stub = sys._getframe(1).f_code      # the stub that raises it
    file = os.path.relpath(stub.co_filename, os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    return NotImplementedError(
        f"exercise {stub.co_name} in {file} is not solved yet: write its body (see "
        f"{where}), then grade it with `make check`.")


def exercises_in(module) -> dict:
    """The exercises `module` defines (not those it imports), by name, in file order."""
    return {name: fn for name, fn in vars(module).items()
            if getattr(fn, "is_exercise", False) and fn.__module__ == module.__name__}
