"""Notebook 11's side: run real torchrun jobs from a cell, and look inside a hung one.

How a job is started, stopped at its deadline and read with py-spy is the harness's
(labs/harness/torchrun.py); here is what the lesson's cells print.
"""
from __future__ import annotations

import ast
import re
import tempfile

import labs.jobs as lab
from labs import launch_exercise
from labs.harness.exercises import NOTES_ENV, SOLUTIONS_ENV, notes_in
from labs.harness.timing import compare, spread
from labs.harness.torchrun import SCRIPTS, JobRun, RankOutput, run_job
from labs.harness.unsolved import say_unsolved

# Also called as `view.<name>`: by notebook 11 (leftovers, run_two_nodes), by the
# lesson's tests (the rest).
from labs.harness.torchrun import (Stack, _marked, _started, leftovers,  # noqa: F401
                                   main_thread_frames, run_torchrun, run_two_nodes)

DEBUG_ENV = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO"}


# -- what the cells print --------------------------------------------------------------------

def show_source(script: str, function: str | None = None):
    """Print labs/scripts/<script>, or one function of it."""
    text = (SCRIPTS / script).read_text()
    if function:
        node = next(n for n in ast.parse(text).body
                    if isinstance(n, ast.FunctionDef) and n.name == function)
        text = "\n".join(text.splitlines()[node.lineno - 1:node.end_lineno])
    print(text.rstrip())


def show_stacks(run: JobRun):
    """One line per rank: the call it is blocked in, then the script's frames."""
    for rank, stack in sorted(run.stacks.items()):
        print(f"rank {rank}:  {stack.where()}")


def ending(output: RankOutput) -> str:
    """How a rank of a failed job ended, in words that do not change from run to run."""
    error = output.error() or ""
    if not error or "Connection closed by peer" in error or "errors while waiting" in error:
        return "stopped after another rank failed (a closed connection, or torchrun's SIGTERM)"
    return re.sub(r"\[[^\]]*\.(?:cc|cpp|h):\d+\] ", "", error)    # drop the C++ source path


def show_endings(run: JobRun):
    for output in run.ranks:
        print(f"rank {output.rank}: {ending(output)}")


def show_log_lines(run: JobRun, pattern: str, ranks=None, width: int = 100):
    """Each rank's log lines that match `pattern`, without time stamps; long lines cut."""
    for output in run.ranks:
        if ranks is None or output.rank in ranks:
            lines = output.log_lines(pattern)
            print(f"rank {output.rank}: {len(lines)} line(s)")
            for line in lines:
                print("   ", line if len(line) <= width else line[:width - 3] + "...")


def run_ring_job(nproc: int = 3, numel: int = 6) -> JobRun:
    """The exercise: run labs/scripts/ring_job.py. While an exercise it needs is not solved,
    say which, where and how to grade it, then show the reference solution's run."""
    args = ["--numel", str(numel)]
    with tempfile.TemporaryDirectory() as notes:     # the stubs that raised leave a note
        run = run_job("ring_job.py", nproc, args, env={NOTES_ENV: notes})
        unsolved = notes_in(notes)
    if not run.succeeded and unsolved:
        say_unsolved(unsolved[0].exercise, unsolved[0].file)
        run = run_job("ring_job.py", nproc, args, env={SOLUTIONS_ENV: "1"})
    run.show(stderr=not run.succeeded)
    total = [float(nproc * i + 10 * sum(range(nproc))) for i in range(numel)]
    printed = [line for r in run.ranks for line in r.stdout.splitlines()]
    print("each rank printed the sum, once:",
          printed == [f"rank {r} result: {total}" for r in range(nproc)])
    return run


# -- async_op=True collectives ---------------------------------------------------------------

def measure_overlap(reps: int = 5) -> dict:
    """labs.jobs.overlap_timing on 2 ranks (with the reference `overlapped_step`, said so,
    while lesson 03's exercise is not solved)."""
    return launch_exercise(lab.overlap_timing, 2, args=(1024, 1024, 256, reps), quiet=True,
                           timeout=120)[0]


def show_overlap(timing: dict):
    """Median and range of every variant, what overlapping saved, verdicts from the ranges."""
    table = compare(timing["seconds"])
    print(table)
    saved = {}
    for family in ("p2p", "all_reduce"):
        print(table.verdict(f"{family} overlapped", f"{family} serial"))
        saved[family] = spread([s - o for s, o in zip(timing["seconds"][f"{family} serial"],
                                                    timing["seconds"][f"{family} overlapped"])])
        print(f"  saved by overlapping, per repetition: median {saved[family].median * 1e3:.1f}"
              f" ms, from {saved[family].low * 1e3:.1f} to {saved[family].high * 1e3:.1f} ms")
    p2p, reduce = saved["p2p"], saved["all_reduce"]
    apart = p2p.high < reduce.low or reduce.high < p2p.low
    print("time saved, p2p vs all_reduce:",
          f"p2p saved {'more' if p2p.median > reduce.median else 'less'} (ranges apart)"
          if apart else "within noise (their ranges overlap)")
