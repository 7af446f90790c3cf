"""Run an exercise on real workers for a grader, and turn what went wrong into advice."""
from __future__ import annotations

import importlib

from labs import HangError, WorkerError, launch
from labs.harness.exercises import SOLUTIONS_ENV


class GradeFailure(AssertionError):
    """An exercise produced a wrong result or failed; the message says what and where."""


GradeFailure.__module__ = "labs.harness.grading"   # where graders import it from


def implementation(impl: str, module: str, name: str):
    """The body under test, looked up in the worker.

    impl "labs": `labs.<module>.<name>` as you wrote it (the stub's own body, never the
    solution); "solutions": `solutions.<module>.<name>`. The graders' own tests grade known
    right and wrong bodies with any other impl: "package.module" (its `<name>`) or
    "package.module:attribute".
    """
    if impl not in ("labs", "solutions"):
        path, _, attribute = impl.partition(":")
        return getattr(importlib.import_module(path), attribute or name)
    fn = getattr(importlib.import_module(f"{impl}.{module}"), name)
    return getattr(fn, "stub", fn) if impl == "labs" else fn


def grade(worker, world_size, args=(), timeout=30.0, what="the exercise", **kwargs):
    """launch() for graders: quiet, stubs never replaced, failures turned into advice."""
    try:
        return launch(worker, world_size, args=args, timeout=timeout, quiet=True,
                      env={SOLUTIONS_ENV: "0"}, **kwargs)
    except WorkerError as exc:
        causes = exc.causes.values()
        if any("NotImplementedError" in c for c in causes):
            raise GradeFailure(f"{what} is not implemented yet: "
                               f"{next(iter(causes))}") from None
        checked = {r: c for r, c in exc.causes.items() if c.startswith("GradeFailure: ")}
        if checked:     # a check inside the worker failed: its message says it all
            rank, cause = min(checked.items())
            raise GradeFailure(f"{what} (world_size={world_size}): rank {rank}: "
                               f"{cause.removeprefix('GradeFailure: ')}") from None
        raise GradeFailure(f"{what} failed on real workers (world_size={world_size}):\n"
                           f"{exc}") from None
    except HangError as exc:
        raise GradeFailure(f"{what} hung with world_size={world_size} (a deadlock or an "
                           f"unmatched send/recv):\n{exc}") from None


def fail_if_any(failures, what, shown=6):
    """Raise one GradeFailure listing every wrong case (`failures`: messages, per rank or flat)."""
    flat = [f for item in failures for f in ([item] if isinstance(item, str) else item)]
    if flat:
        more = f"\n... and {len(flat) - shown} more" if len(flat) > shown else ""
        raise GradeFailure(f"{what}: {len(flat)} wrong result(s):\n"
                           + "\n".join(flat[:shown]) + more)
