"""Predict what a point-to-point program will do before any worker starts, then check it.

A *schedule* is the list of point-to-point calls each rank makes, in program order,
written as data:

    from labs.harness.schedule import send, recv, isend, irecv, batch, wait, check
    head_to_head = {0: [send(1, 10), recv(1, 10)],
                    1: [send(0, 10), recv(0, 10)]}
    report = check(head_to_head)
    print(report)

`check` starts no worker. It matches every send to its receive as gloo does (FIFO per
(source, destination, tag)) and simulates the ranks step by step with gloo's rule: a
send completes only once its receive is posted (a rendezvous, never buffered; an
isend's wait likewise). It names every problem with the ranks involved: a deadlock (the
cycle of waiting ranks), an unmatched send or receive, a tag mismatch, send/recv to
self, a size mismatch (silent prefix fill, or SIGABRT when the receive buffer is
smaller), a dtype mismatch (silent reinterpretation), and says what would differ on NCCL.

    execute(schedule)          run it on real gloo workers; classify what really happened
    from_trace(results.trace)  turn a traced real run back into a schedule

    from labs.harness.schedule.drawing import draw, step_through
    draw(schedule, report)     ranks as lanes, calls in program order, matched pairs
    step_through(schedule)     replay the prediction step by step (a slider)

The language: `send(peer, numel, dtype="float32", tag=0)` and `recv(...)` are blocking;
`isend(...)`/`irecv(...)` post and return a handle you `wait(handle)` on; `batch([isend(..),
irecv(..)])` is one `batch_isend_irecv` call, `wait(the_batch)` waits for all of it;
`wait()` waits for everything the rank has posted and not yet waited for;
`recv(None, ...)` / `irecv(None, ...)` receive from any source; `barrier()`;
`compute("label", seconds)` stands for local work (a traced span when executed).

What the model leaves out, on purpose: a rank that has finished is assumed to stay alive
(`execute` keeps finished workers alive the same way; in a real program a peer that exits
turns a hang into "Connection closed by peer"); `is_completed()` polling; which sender an
any-source receive gets when several could match (reported as a race); collectives are
only "every rank must enter the k-th one". NCCL is modelled from its documented rules,
never run here.

One job per module, in the order a schedule goes through them:

    language     the calls: send, recv, isend, irecv, batch, wait, barrier, compute
    program      Schedule: the calls checked and numbered (every op a P2P, every call an Instr)
    simulation   the ranks run step by step under gloo's (or NCCL's) matching rules
    verdicts     the problems found: calls that raise, buffers that disagree, lone ops
    deadlock     stuck ranks and the cycles they wait in
    report       check(): all of the above, as a Report
    traces       from_trace(): a real run's trace back into a schedule
    real_run     execute() and the worker side, run_schedule()
    drawing      draw() and step_through(); notebook side, not imported here, so that
                 workers (which import this package to run a schedule) never load matplotlib

`python -m labs.harness.schedule` runs a batched ring shift the checker predicts is safe.
"""
from labs.harness.schedule.language import (DTYPES, Batch, Collective, Compute, ScheduledOp,
                                            Wait, barrier, batch, collective, compute, irecv,
                                            isend, recv, send, wait)
from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.program import P2P, Instr, Schedule, as_schedule
from labs.harness.schedule.real_run import (HANG_TIMEOUT, Arrived, RunOutcome, demo, execute,
                                            payload, ring_shift_schedule,
                                            run_schedule)
from labs.harness.schedule.report import Report, check
from labs.harness.schedule.simulation import SimulationStep
from labs.harness.schedule.traces import from_trace
from labs.harness.schedule.verdicts import Verdict

__all__ = ["send", "recv", "isend", "irecv", "batch", "wait", "barrier", "collective",
           "compute", "check", "execute", "from_trace", "Schedule", "as_schedule", "Report",
           "Verdict", "Outcome", "SimulationStep", "RunOutcome", "Arrived", "run_schedule",
           "payload", "ring_shift_schedule", "demo", "HANG_TIMEOUT", "DTYPES", "ScheduledOp",
           "Batch", "Wait",
           "Collective", "Compute", "P2P", "Instr"]
