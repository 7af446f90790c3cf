"""Run a notebook cell that needs one of your exercises, solved or not.

`launch_exercise` is `launch` for a cell whose workers call an exercise. Solved: you see
your own result. Not solved yet: two lines say which exercise, where, and how to grade it,
then the cell runs again with that exercise's reference body in its place (and only that
one: an exercise you did solve still runs your code, e.g. your all-gather on top of the
reference reduce-scatter), so the lesson still reads to its end.
"""
from __future__ import annotations

import os
import sys

from labs.harness.launch.errors import HangError, WorkerError
from labs.harness.launch.messages import describe_statuses
from labs.harness.ranks.exercises import SOLUTIONS_ENV
from labs.harness.launch.launcher import launch
from labs.harness.launch.output import replay
from labs.harness.launch.spec import PROGRESS_CAP, STUCK_SECONDS


def unsolved_exercise(exc: WorkerError) -> tuple[str, str] | None:
    """(name, file) of the exercise whose stub made the workers fail, if that was the cause
    (`exc.unsolved`, sent by the workers as data)."""
    for rank in sorted(exc.unsolved):
        return exc.unsolved[rank].exercise, exc.unsolved[rank].file
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
    """The two lines a cell prints before it runs the reference body in place of yours;
    once per exercise and cell, also when the cell launches it several times."""
    cell = _this_cell()
    if cell is not None:
        if (cell, name) in _SAID:
            return
        _SAID.add((cell, name))
    print(f"Exercise `{name}` ({file}) is not solved yet: below, the REFERENCE solution "
          f"runs in its place.")
    again = "run the widget again" if _in_widget() else "run this cell again"
    print(f"Solve it, grade it with `make check`, then {again} to see your own.")


def _in_widget() -> bool:
    """Called from a widget's callback (its Run button, a slider), not from a cell's code."""
    frame = sys._getframe(1)
    while frame is not None:
        if f"{os.sep}ipywidgets{os.sep}" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def launch_exercise(fn, world_size: int = 2, args=(), timeout: float = 30.0, **kwargs):
    """launch(fn, ...); for every exercise it calls that is not solved yet, say so in two
    lines (once per exercise) and run again with that exercise's reference body only.

    A hang is told as the graders tell it: once every rank has sat waiting STUCK_SECONDS
    with nothing moving (not after gloo's timeout, which is kept out of the way unless the
    cell passes its own pg_timeout to show it), each rank's line in your code first:
    'labs/deadlocks.py:207: rank 0 blocked in send(...)'."""
    quiet = kwargs.pop("quiet", False)
    env = dict(kwargs.pop("env", None) or {})
    if "pg_timeout" not in kwargs:      # else the cell shows gloo's own timeout on purpose
        kwargs.setdefault("stuck_after", STUCK_SECONDS)
        kwargs["pg_timeout"] = PROGRESS_CAP * timeout
    stand_ins: list[str] = []              # exercises whose reference body runs in their place
    while True:
        run_env = {**env, SOLUTIONS_ENV: ",".join(stand_ins)} if stand_ins else env
        try:
            results = launch(fn, world_size, args, timeout, quiet=True, env=run_env or None,
                             **kwargs)
            break
        except HangError as exc:
            raise _located(exc) from None
        except WorkerError as exc:
            unsolved = unsolved_exercise(exc)
            if unsolved is None or unsolved[0] in stand_ins:
                raise
            say_unsolved(*unsolved)
            stand_ins.append(unsolved[0])
    if not quiet:
        replay(results.outputs)
    return results


def _located(exc: HangError) -> HangError:
    """The same hang, each rank's line your code's line first, like a compiler."""
    lines = str(exc).splitlines()
    ranks = describe_statuses(exc.statuses, timings=False, located=True)
    located = HangError("\n".join([lines[0], *("  " + line for line in ranks), *lines[-1:]]),
                        exc.statuses, exc.stuck_for, exc.reason)
    located.__dict__.update({k: v for k, v in exc.__dict__.items() if k not in vars(located)})
    return located
