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
from labs.harness.launch.errors import Interrupted, LaunchError
from labs.harness.ranks.exercises import exercise, solutions_enabled
from labs.harness.launch.launcher import HangError, Results, WorkerError, launch, last_worker_pids
from labs.harness.launch.unsolved import launch_exercise

__all__ = ["launch", "launch_exercise", "WorkerError", "HangError", "Interrupted", "LaunchError",
           "Results", "last_worker_pids", "exercise", "solutions_enabled"]
