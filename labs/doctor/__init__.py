"""The point-to-point doctor: run a reader's own torchrun script on gloo, record every
communication call of every rank with the script's file:line, and diagnose it.

    python -m labs.doctor [torchrun options] SCRIPT [ARGS]
    python -m labs.doctor --nproc-per-node 4 my_pipeline.py --steps 2

From Python (the notebook of lesson 12, the tests):

    from labs.doctor import Job, examine
    report = examine(Job("labs/scripts/doctor/head_to_head.py", torchrun_args=["--nproc-per-node=2"]))
    print(report.text(timings=False)); report.status    # 0 checked and clean, 1 problems,
                                                         # 2 nothing checked, or not all
                                                         # (the report says why)

One job per module:

    agent        the rank side: gloo forced, the record and the buffer watch, events to a file
    works        the list batch_isend_irecv returns, telling how the script reads it
    watch        buffers used while in flight (a TorchDispatchMode), as byte ranges
    stream_order which CUDA streams are ordered after a receive's wait (wait_stream, events)
    cuda         CUDA onto the CPU inside the ranks (a TorchFunctionMode for devices)
    gpu_view     what the script's own code is told: a GPU's answers (is_cuda, backend, autocast)
    standin      the stand-in torch.cuda: devices, streams and events, recorded not run
    events       the Event each rank writes, one JSON line each
    run          the parent side: torchrun with a deadline, a hang stopped, nothing left
    ranks        each rank's events read back as calls
    matching     which send met which receive, per process group (gloo's rule, NCCL's)
    diagnose     hangs and deadlock cycles, lone ops, waits (observed on gloo)
    buffers      buffers in flight, size and dtype mismatches
    failures     send/recv to self, failed calls, polling loops, a group that outlives its
                 destroy, the script's own errors; one bug is one problem
    portability  NCCL rules (modelled): any source, tags, first batch, one GPU, Works
    torch_docs   every note and warning of torch's P2P docstrings: a rule or a stated limit
    communicators  NCCL's per-pair communicators, created lazily without device_id (modelled)
    streams      NCCL's stream model for ungrouped exchanges (modelled)
    kernels      NCCL's order of kernels per communicator, collectives and barriers included
    holders      what still holds a process group after destroy_process_group, and its fix
    findings     a Finding (one problem) and the lesson that teaches each kind
    doctor       all of the above into a Report
    report       the Report and its text (problems count; notes do not)
    exits        how a run ended, in words: the deadline, the script's own errors, exit 2's verdict
    timeline     the run's per-rank timeline, problems marked, as a PNG
    trace        the run as Chrome trace events (--trace FILE.json: Perfetto, chrome://tracing)
    __main__     the command line (argparse)
"""
from __future__ import annotations

from labs.doctor.doctor import report as _report
from labs.doctor.report import CLEAN, Report
from labs.doctor.run import Job, Outcome, run

__all__ = ["Job", "Outcome", "Report", "examine", "run", "CLEAN"]


def examine(job: Job) -> Report:
    """Run `job` and diagnose it."""
    return _report(run(job))
