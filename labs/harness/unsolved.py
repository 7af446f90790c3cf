"""Run a notebook cell that needs one of your exercises, solved or not.

`launch_exercise` is `launch` for a cell whose workers call an exercise. Solved: you see
your own result. Not solved yet: two lines say which exercise, where, and how to grade it,
then the cell shows the reference solution's result, so the lesson still reads to its end.
"""
from __future__ import annotations

import re

from labs.harness.errors import WorkerError
from labs.harness.exercises import SOLUTIONS_ENV
from labs.harness.launcher import launch
from labs.harness.output import replay

# What an unsolved stub raises (labs.harness.exercises.todo), as it reads in a traceback.
UNSOLVED = re.compile(r"NotImplementedError: exercise (\w+) in (\S+) is not solved yet")


def unsolved_exercise(exc: WorkerError) -> tuple[str, str] | None:
    """(name, file) of the exercise whose stub made the workers fail, if that was the cause."""
    for cause in exc.causes.values():
        found = UNSOLVED.match(cause)
        if found:
            return found[1], found[2]
    return None


_SAID: set = set()


def _this_cell():
    """The running notebook cell's execution count, or None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return None if shell is None else shell.execution_count


def say_unsolved(name: str, file: str) -> None:
    """The two lines a cell prints before it shows the reference result instead of yours;
    once per exercise and cell, also when the cell launches it several times."""
    cell = _this_cell()
    if cell is not None:
        if (cell, name) in _SAID:
            return
        _SAID.add((cell, name))
    print(f"Exercise `{name}` ({file}) is not solved yet: below is the REFERENCE "
          f"solution's result, not yours.")
    print("Solve it, grade it with `make check`, then run this cell again to see your own.")


def launch_exercise(fn, world_size: int = 2, args=(), timeout: float = 30.0, **kwargs):
    """launch(fn, ...); if an exercise it calls is not solved yet, say so in two lines and
    return the reference solution's results instead."""
    quiet = kwargs.pop("quiet", False)
    try:
        results = launch(fn, world_size, args, timeout, quiet=True, **kwargs)
    except WorkerError as exc:
        unsolved = unsolved_exercise(exc)
        if unsolved is None:
            raise
        say_unsolved(*unsolved)
        env = {**(kwargs.pop("env", None) or {}), SOLUTIONS_ENV: "1"}
        return launch(fn, world_size, args, timeout, quiet=quiet, env=env, **kwargs)
    if not quiet:
        replay(results.outputs)
    return results
