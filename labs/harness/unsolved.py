"""Run a notebook cell that needs one of your exercises, solved or not.

`launch_exercise` is `launch` for a cell whose workers call an exercise. Solved: you see
your own result. Not solved yet: two lines say which exercise, where, and how to grade it,
then the cell shows the reference solution's result, so the lesson still reads to its end.
"""
from __future__ import annotations

from labs.harness.errors import WorkerError
from labs.harness.exercises import SOLUTIONS_ENV
from labs.harness.launcher import launch
from labs.harness.output import replay


def unsolved_exercise(exc: WorkerError) -> tuple[str, str] | None:
    """(name, file) of the exercise whose stub made the workers fail, if that was the cause
    (`exc.unsolved`, sent by the workers as data)."""
    for rank in sorted(exc.unsolved):
        return exc.unsolved[rank].exercise, exc.unsolved[rank].file
    return None


def say_unsolved(name: str, file: str) -> None:
    """The two lines a cell prints before it shows the reference result instead of yours."""
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
