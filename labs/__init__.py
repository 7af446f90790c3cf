"""Point-to-point, demystified: the course's lab code.

The harness, written once and shared by every lesson:
    launch             start real gloo workers (labs.harness.launcher)
    launch_exercise    the same for a cell that needs an exercise: the reference result,
                       clearly marked, until you have solved it (labs.harness.unsolved)
    WorkerError        a worker raised or died
    HangError          the workers stopped making progress (a TimeoutError)
    Interrupted        you interrupted the kernel during a launch (a KeyboardInterrupt)
    tracing.span       mark a compute region for the timeline (labs.harness.tracing)
    exercise           marks an exercise stub (labs.harness.exercises)

One lab module per lesson (labs.p2p, labs.batching, ...) holds that lesson's worker
functions and exercise stubs. Import them by name; they are not imported here, so that
your edits are picked up by the next launch.
"""
from labs.harness.errors import Interrupted, LaunchError
from labs.harness.exercises import exercise, solutions_enabled
from labs.harness.launcher import HangError, Results, WorkerError, launch, last_worker_pids
from labs.harness.unsolved import launch_exercise

__all__ = ["launch", "launch_exercise", "WorkerError", "HangError", "Interrupted", "LaunchError",
           "Results", "last_worker_pids", "exercise", "solutions_enabled"]
