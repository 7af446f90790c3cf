"""Point-to-point, demystified: the course's lab code.

The harness, written once and shared by every lesson:
    launch             start real gloo workers (labs.harness.launcher)
    WorkerError        a worker raised or died
    HangError          the workers stopped making progress (a TimeoutError)
    tracing.span       mark a compute region for the timeline (labs.harness.tracing)
    exercise           marks an exercise stub (labs.harness.exercises)

One lab module per lesson (labs.p2p, labs.batching, ...) holds that lesson's worker
functions and exercise stubs. Import them by name; they are not imported here, so that
your edits are picked up by the next launch.
"""
from labs.harness.launcher import HangError, Results, WorkerError, launch, last_worker_pids
from labs.harness.exercises import exercise, solutions_enabled

__all__ = ["launch", "WorkerError", "HangError", "Results", "last_worker_pids",
           "exercise", "solutions_enabled"]
