"""Point-to-point, demystified: the course's lab code.

The harness, written once and shared by every lesson:
    launch             start real gloo workers (labs.harness.launch.launcher)
    launch_exercise    the same for a cell that needs an exercise: the reference result,
                       clearly marked, until you have solved it (labs.harness.launch.unsolved)
    WorkerError        a worker raised or died
    HangError          the workers stopped making progress (a TimeoutError)
    Interrupted        you interrupted the kernel during a launch (a KeyboardInterrupt)
    tracing.span       mark a compute region for the timeline (labs.harness.ranks.tracing)
    exercise           marks an exercise stub (labs.harness.ranks.exercises)

One lab module per lesson (labs.p2p, labs.batching, ...) holds that lesson's worker
functions and exercise stubs. Import them by name; they are not imported here, so that
your edits are picked up by the next launch.
"""
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:       # what the names below are (for readers, tools and the layers test)
    from labs.harness.launch.errors import Interrupted, LaunchError  # noqa: F401
    from labs.harness.launch.launcher import (HangError, Results, WorkerError,  # noqa: F401
                                              last_worker_pids, launch)
    from labs.harness.launch.unsolved import launch_exercise  # noqa: F401
    from labs.harness.ranks.exercises import exercise, solutions_enabled  # noqa: F401

# Loaded on first use (PEP 562), so that a command that starts no worker (`make reset`) does
# not import torch: `from labs import launch` works as before.
_WHERE = {"Interrupted": "labs.harness.launch.errors", "LaunchError": "labs.harness.launch.errors",
          "exercise": "labs.harness.ranks.exercises",
          "solutions_enabled": "labs.harness.ranks.exercises",
          **dict.fromkeys(["HangError", "Results", "WorkerError", "launch", "last_worker_pids"],
                          "labs.harness.launch.launcher"),
          "launch_exercise": "labs.harness.launch.unsolved"}


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module 'labs' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value

__all__ = ["launch", "launch_exercise", "WorkerError", "HangError", "Interrupted", "LaunchError",
           "Results", "last_worker_pids", "exercise", "solutions_enabled"]
