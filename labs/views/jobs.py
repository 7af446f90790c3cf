"""Notebook 11's side: run real torchrun jobs from a cell, and look inside a hung one.

How a job is started, stopped at its deadline and read with py-spy is the harness's
(labs/harness/commands/torchrun.py); here is what the lesson's cells print.
"""
from __future__ import annotations

import ast
import json
import re
import tempfile
from pathlib import Path

import labs.jobs as lab
from labs import launch_exercise
from labs.harness.ranks.exercises import (NOTES_ENV, SOLUTIONS_ENV, Unsolved, notes_in,
                                          solution_wanted, untouched)
from labs.harness.notebook.timing import compare, spread
from labs.harness.commands.torchrun import ROOT, SCRIPTS, JobRun, RankOutput, run_job
from labs.harness.launch.unsolved import say_unsolved

# Notebook 11 calls these as `view.leftovers()`, `view.run_two_nodes(...)`.
from labs.harness.commands.torchrun import leftovers, run_two_nodes  # noqa: F401

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


ABORT = "terminate called without an active exception"


def aborted(run: JobRun) -> bool:
    """Did a rank abort after its work (SIGABRT from C++'s std::terminate)?"""
    return any(ABORT in output.stderr for output in run.ranks)


def run_leaving(args=(), attempts: int = 4) -> JobRun:
    """labs/scripts/leave_after_ddp.py (DDP, then a late all_reduce), run again (up to
    `attempts` times) until a rank aborts at exit. The abort needs a gloo thread to release
    a tensor just as Python shuts down; the script arranges that timing, and it held in 34
    of 35 runs measured on a loaded 2-core machine. A run that does not abort proves
    nothing, so the next run tries again. With --import-first no rank can abort (the group
    ends before shutdown): one run."""
    for _ in range(1 if "--import-first" in args else attempts):
        run = run_job("leave_after_ddp.py", nproc=2, args=list(args), deadline_s=60)
        if aborted(run):
            break
    _leaving_runs[tuple(args)] = run
    return run


_leaving_runs: dict[tuple[str, ...], JobRun] = {}     # this process's last run_leaving, per args


def leaving_run(args=()) -> JobRun:
    """The run_leaving(args) this kernel showed last, or a new one (the claims ledger runs in
    a process of its own): the notebook's claim judges the runs its cells printed, and costs
    no second job."""
    return _leaving_runs.get(tuple(args)) or run_leaving(args)


def run_importing_dynamo(args=()) -> JobRun:
    """labs/scripts/leave_after_dynamo.py: join, import torch._dynamo, destroy, count the
    group's gloo threads (deterministic: one run)."""
    return run_job("leave_after_dynamo.py", nproc=2, args=list(args), deadline_s=60)


def threads_left(run: JobRun) -> list[int | None]:
    """Each rank's count of the group's gloo worker threads after destroy_process_group(),
    from the last number of its line (leave_after_ddp.py and leave_after_dynamo.py print it)."""
    return [int(r.stdout.split(":")[-1]) if r.stdout.strip() else None for r in run.ranks]


def show_exits(run: JobRun):
    print(f"a rank aborted at exit ({ABORT}): {aborted(run)}")


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
    # A job that would only raise (your untouched stub): no need to start it.
    if untouched(lab.ring_job.stub) and not solution_wanted("ring_job"):
        run, unsolved = None, [Unsolved("ring_job", "labs/jobs.py", "")]
    else:
        with tempfile.TemporaryDirectory() as notes:     # the stubs that raised leave a note
            run = run_job("ring_job.py", nproc, args, env={NOTES_ENV: notes})
            unsolved = notes_in(notes)
    if run is None or (not run.succeeded and unsolved):
        say_unsolved(unsolved[0].exercise, unsolved[0].file)
        run = run_job("ring_job.py", nproc, args, env={SOLUTIONS_ENV: "1"})
    run.show(stderr=not run.succeeded)
    total = [float(nproc * i + 10 * sum(range(nproc))) for i in range(numel)]
    printed = [line for r in run.ranks for line in r.stdout.splitlines()]
    print("each rank printed the sum, once:",
          printed == [f"rank {r} result: {total}" for r in range(nproc)])
    return run


# -- printing what a job left without machine details -----------------------------------------

def sanitised(text: str) -> str:
    """`text` with paths relative to the course, and no date, time, pid, port or other path:
    what this machine put there is replaced by a <placeholder>."""
    text = text.replace(str(ROOT) + "/", "")
    text = re.sub(r"[^\s\"']*/lib/python[\d.]+/site-packages/", "<site-packages>/", text)
    text = re.sub(r"[^\s=\"']*/p2p-job-[^/\s]+", "<log dir>", text)     # any TMPDIR
    text = re.sub(r"\S*/p2p-fr-[^/\s]+", "FR_DIR", text)
    text = re.sub(r"(?<![\w.\]>])/(?:[^\s/:()\[\]]+/)+(?=[^\s/:()\[\]]+)", "<path>/", text)
    text = re.sub(r"\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", "<time>", text)
    text = re.sub(r"\[([IWEF])\d{4} [\d:.]+ ", r"[\1<time> ", text)        # glog prefixes
    text = re.sub(r"\b(pid:? |Process |Thread )\d+", r"\1<pid>", text)
    text = re.sub(r"\b(\d{1,3}(?:\.\d{1,3}){3}\]?|localhost|\])([:, ]+)\d{4,5}\b", r"\1\2<port>", text)
    text = re.sub(r"\b(fd|addr)=\S+", r"\1=<...>", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\S*", "<run id>", text)
    return text


# -- torchrun's "Root Cause" -----------------------------------------------------------------

def failures(run: JobRun) -> tuple[dict[int, int], int | None]:
    """From torchrun's report: {rank: error time in whole seconds} for every failed rank, and
    the rank it names as "Root Cause (first observed failure)"."""
    import datetime
    times, named = {}, None
    for summary in run.summaries:
        body, _, root = summary.partition("Root Cause (first observed failure):")
        for part, is_root in ((body, False), (root, True)):
            for stamp, rank in re.findall(r"time\s*: (\S+)\s+host\s*: \S+\s+rank\s*: (\d+)",
                                          part):
                seconds = int(datetime.datetime.strptime(stamp, "%Y-%m-%d_%H:%M:%S").timestamp())
                times[int(rank)] = seconds
                if is_root and named is None:
                    named = int(rank)
    return times, named


def show_root_cause(run: JobRun):
    """Each failed rank's error time (whole seconds, from the first one) and the rank torchrun
    named; True if that rank has the smallest time."""
    times, named = failures(run)
    first = min(times.values())
    for rank, t in sorted(times.items()):
        print(f"rank {rank}: error time = first + {t - first} s")
    tied = [r for r, t in sorted(times.items()) if t == first]
    print(f"smallest time: rank{'s' if len(tied) > 1 else ''} {', '.join(map(str, tied))}; "
          f"torchrun's Root Cause: rank {named}")
    return named in tied


# -- the flight recorder on gloo -------------------------------------------------------------

FR_ENV = {"TORCH_FR_BUFFER_SIZE": "100"}


def run_hung_job(args=(), after_s: float = 2.0, **kwargs) -> JobRun:
    """hung_job.py with the flight recorder on (TORCH_FR_BUFFER_SIZE) and each rank writing
    its record `after_s` seconds into the step; `run.flight_records`: {rank: [entry, ...]}.
    The command shown names the record's folder FR_DIR."""
    with tempfile.TemporaryDirectory(prefix="p2p-fr-") as where:
        run = run_job("hung_job.py", 4, [*args, "--fr-dump", where, "--fr-dump-after",
                                         str(after_s)], env=FR_ENV, **kwargs)
        run.flight_records = {int(f.stem[4:]): json.loads(f.read_text()).get("entries", [])
                              for f in sorted(Path(where).glob("rank*.json"))}
    env = " ".join(f"{k}={v}" for k, v in FR_ENV.items())
    run.commands = [f"{env} {c.replace(where, 'FR_DIR')}" for c in run.commands]
    return run


def show_flight_records(records: dict):
    """One line per recorded operation and rank: sequence number, operation, sizes, state."""
    for rank, entries in sorted(records.items()):
        ops = [f"#{e['collective_seq_id']} {e['profiling_name']} {e['input_sizes']} "
               f"({e['state']})" for e in entries]
        print(f"rank {rank}: {len(entries)} recorded: " + "; ".join(ops))


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


def show_listeners(run: JobRun) -> dict[str, bool]:
    """What the job listened on while it ran (run_job(..., listeners=True)), as verdicts
    that hold on any machine: where the agent's store and the ranks' gloo listened."""
    import socket
    from labs.harness.commands.listeners import EVERY_INTERFACE, host_of
    hosts = {role: sorted({host_of(a) for a, r in run.listeners.items() if r == role})
             for role in ("agent", "rank")}
    resolved = socket.gethostbyname(socket.gethostname())
    verdicts = {
        "torchrun's agent (the rendezvous store) listened on every interface":
            bool(hosts["agent"]) and all(h in EVERY_INTERFACE for h in hosts["agent"]),
        "every rank's gloo listened on the address this machine's host name resolves to":
            bool(hosts["rank"]) and all(h == resolved for h in hosts["rank"]),
    }
    for what, holds in verdicts.items():
        print(f"{what}: {holds}")
    return verdicts
