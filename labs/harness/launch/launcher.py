"""Start real gloo workers from a notebook cell (or a test, or a script).

    from labs import launch
    results = launch(fn, world_size=4, args=(...), timeout=20.0)

`fn(rank, world_size, *args)` runs in `world_size` fresh processes with the default gloo
process group initialised; `launch` returns their return values in rank order. How:

  * processes come from `torch.multiprocessing` with the *forkserver* start method and
    torch preloaded in the server: the first launch pays for importing torch once, every
    later launch forks a ready process (`python -m labs.bench launch` measures both).
  * each launch gets a private rendezvous: a TCPStore that the parent opens on a port the
    OS picks, so parallel launches (two notebooks, parallel tests) never collide; it and
    the workers' gloo listeners are on 127.0.0.1 only (rendezvous.py).
  * each worker's stdout/stderr goes to its own file and is replayed after the run in
    rank order, so a cell prints the same thing every time.
  * a worker exception, a worker death and a hang each become one clear exception here;
    in every case all workers are killed and reaped before it reaches you.

The journey of one call, file by file: launcher (checks, the fork server) -> supervise
(start, watch, stop) -> worker (in each process: join, run fn, report) -> messages (what
they say) -> errors (WorkerError / HangError) -> output (replay in rank order).
"""
from __future__ import annotations

import importlib
import io
import os
import pickle
import threading
import time

import torch.multiprocessing as tmp

from labs.harness.launch import leftovers
from labs.harness.launch.errors import HangError, LaunchError, WorkerError, raise_if_failed
from labs.harness.launch.output import replay
from labs.harness.launch.spec import FORKSERVER_START, JOIN_TIMEOUT, LaunchSpec
from labs.harness.launch.supervise import run_workers
from labs.harness.launch.worker import exc_summary

__all__ = ["launch", "Results", "LaunchError", "WorkerError", "HangError", "last_worker_pids",
           "JOIN_TIMEOUT"]

MAX_WORLD_SIZE = 32
START_METHOD = "forkserver"
# What the fork server imports once. Lesson modules are *not* preloaded, so a reader's
# edits to labs/*.py reach the next launch without restarting the kernel. torch._dynamo
# is imported by DistributedDataParallel's constructor and is slow to import: preloaded,
# every DDP launch forks it ready.
PRELOAD = ["torch", "torch.distributed", "torch._dynamo", "labs.harness.launch.launcher"]
_extra_preload: list[str] = []
# Environment variables a launch forwards to its workers at call time (the fork server's
# own environment is frozen when it starts).
FORWARDED_ENV_PREFIX = "P2P_COURSE_"


class Results(list):
    """The per-rank return values, in rank order (a plain list), plus what the run left:
    `.outputs` (rank -> captured text), `.trace` (list of `tracing.Event`), `.seconds`."""

    outputs: dict
    trace: list
    seconds: float


_context_lock = threading.Lock()
_context_ready = False


def _context():
    """The forkserver context, started and warmed up once per (kernel) process."""
    global _context_ready
    ctx = tmp.get_context(START_METHOD)
    with _context_lock:
        if not _context_ready:
            ctx.set_forkserver_preload(PRELOAD + _extra_preload)
            # Fork one no-op child now, so the first real launch's deadline does not
            # include the fork server importing torch.
            p = ctx.Process(target=_noop)
            with leftovers.handed_to_the_fork_server():
                p.start()
            p.join(FORKSERVER_START)
            _context_ready = True
    return ctx


def _noop():
    pass


leftovers.take_over()       # in the fork server, which preloads this module: see leftovers.py


def warm_up() -> None:
    """Start the fork server now, in the background: its import of torch overlaps with
    what this process does meanwhile (make check collecting the graders); the first launch
    waits for it as usual."""
    threading.Thread(target=_context, daemon=True, name="p2p-fork-server-warm-up").start()


def preload_also(*modules: str):
    """Have the fork server import these too (call before the first launch): the test suite
    preloads pytest and the grading harness, which every grader's workers import, so each
    rank of each launch does not import them again. Never a lesson module (see PRELOAD)."""
    if _context_ready:
        raise RuntimeError("preload_also() must come before the first launch")
    _extra_preload.extend(m for m in modules if m not in _extra_preload)


def _check_fn(fn):
    if not callable(fn):
        raise LaunchError(f"launch() needs a function to run on every rank, got {fn!r}.")
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    name = getattr(fn, "__name__", "fn")
    where = ("It is a lambda or a nested function, which worker processes cannot import."
             if "<" in qualname else
             "It is defined in the notebook (module __main__), and worker processes cannot "
             "import a notebook." if module == "__main__" else "")
    if not where:
        try:
            found = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
            if found is not fn and getattr(found, "__wrapped__", None) is not fn:
                where = f"{module}.{qualname} is not the same object as the one you passed."
        except (ImportError, AttributeError, TypeError):
            where = f"It cannot be imported as {module}.{qualname}."
    if where:
        shown = name if name.isidentifier() else "my_fn"
        raise LaunchError(
            f"launch() cannot start {name!r} in worker processes. {where} Put the function "
            f"in a module (for your own experiments: labs/playground.py), then `from "
            f"labs.playground import {shown}` and launch that. Workers import functions by "
            f"name; see notebook 00.")


class _ArgsPickler(pickle.Pickler):
    """pickle.dumps, plus: an object whose class (or a function) lives in the notebook
    pickles fine here but cannot be unpickled in a worker; say so now, not as a worker's
    AttributeError."""

    def reducer_override(self, obj):
        owner = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__") \
            else type(obj)
        if getattr(owner, "__module__", None) == "__main__":
            raise pickle.PicklingError(
                f"{getattr(owner, '__qualname__', owner)} is defined in the notebook (module "
                f"__main__), which worker processes cannot import")
        return NotImplemented


def _picklable(arg) -> None:
    _ArgsPickler(io.BytesIO()).dump(arg)


def _check_args(fn, world_size, args, timeout):
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        hint = (f" Write world_size={int(world_size)}." if isinstance(world_size, str)
                and world_size.strip().isdigit() else "")
        raise LaunchError(f"world_size must be an int between 1 and {MAX_WORLD_SIZE}, "
                          f"got {world_size!r} (a {type(world_size).__name__}).{hint}")
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise LaunchError(f"world_size must be between 1 and {MAX_WORLD_SIZE}, got {world_size}. "
                          f"Every rank is a process of its own: 2-4 ranks are plenty for "
                          f"every lesson.")
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"args must be a tuple of extra arguments for {fn.__name__}, "
                          f"e.g. args=(1024,), got {type(args).__name__}.")
    if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and timeout > 0):
        raise LaunchError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    for i, arg in enumerate(args):
        try:
            _picklable(arg)
        except Exception as exc:  # noqa: BLE001
            raise LaunchError(
                f"args[{i}] ({type(arg).__name__}) cannot be sent to worker processes: "
                f"{exc_summary(exc)}. Pass plain data (numbers, strings, tensors, lists, "
                f"dicts) and build anything else (models, locks, files) inside the worker."
            ) from None


def launch(fn, world_size: int = 2, args=(), timeout: float = 30.0, *,
           pg_timeout: float | None = None, threads: int = 1, env: dict | None = None,
           quiet: bool = False, stuck_after: float | None = None,
           idle_after: float | None = None) -> Results:
    """Run `fn(rank, world_size, *args)` on `world_size` gloo workers; return their values.

    timeout:    seconds `fn` may run, counted from the moment every rank has joined the
                group, before the launch is declared hung (`HangError`). Starting and
                joining have their own limit (JOIN_TIMEOUT, 60 s), so a slow start on a
                loaded machine is never mistaken for a hang.
    pg_timeout: gloo's own per-operation timeout inside the workers; shorter than
                `timeout` (default 0.75 * timeout) so gloo reports a hang first.
    threads:    torch intra-op threads per worker (1, as torchrun sets OMP_NUM_THREADS=1).
    env:        extra environment variables for the workers.
    quiet:      do not replay the workers' output (it is still in `results.outputs`).
    stuck_after: a hang (`HangError`) once every running rank has sat this long in a
                torch.distributed call with nothing posted or completed anywhere (a
                deadlock, told by what the ranks do, not by a clock: the graders use it);
                `timeout` then counts from the last sign of progress, PROGRESS_CAP (4)
                timeouts at most: a loaded machine cannot fake a hang.
    idle_after: with stuck_after, a hang at the rank's line once one rank has sat this long
                outside torch.distributed with nothing posted, completed, begun or computed (a
                sleep): for small work (graders' cases), never a notebook's own launch.
    """
    try:
        _check_fn(fn)
        _check_args(fn, world_size, args, timeout)
    except LaunchError as exc:
        # no traceback of its own: the reader sees their call and this line, not the checks'
        raise exc.with_traceback(None) from None
    spec = _spec(fn, world_size, args, timeout, pg_timeout, threads, env, stuck_after,
                 idle_after)
    outcome, seconds = _run(spec)
    if not quiet:
        replay(outcome.outputs, died=outcome.deaths)
    try:
        raise_if_failed(outcome, timeout, spec.pg_timeout)
    except (WorkerError, HangError) as exc:     # the reader's call, not the harness's frames
        raise _with_what_ran(exc, outcome).with_traceback(None) from None
    return _results(outcome, world_size, seconds)


def _with_what_ran(exc, outcome):
    """`exc` carrying everything the workers printed (C++ log lines too) and what each rank
    did up to the failure: calls that never completed last until the ranks were stopped
    (a timeline draws them that long)."""
    exc.outputs = outcome.outputs
    exc.trace = merge_traces(outcome.events, outcome.stopped_at)
    return exc


def _results(outcome, world_size, seconds) -> Results:
    """The ranks' values in rank order, with what the run left (see Results)."""
    results = Results(outcome.values[r] for r in range(world_size))
    results.outputs = {r: outcome.outputs.get(r, "") for r in range(world_size)}
    results.seconds = seconds
    results.trace = merge_traces(outcome.events)
    return results


def _spec(fn, world_size, args, timeout, pg_timeout, threads, env, stuck_after,
          idle_after=None) -> LaunchSpec:
    """launch's arguments, checked, as one LaunchSpec: gloo's timeout defaulted, the
    environment the workers get (this process's P2P_COURSE_* variables, then `env`)."""
    pg_timeout = pg_timeout if pg_timeout is not None else max(0.5, 0.75 * timeout)
    worker_env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIX)}
    worker_env.update({str(k): str(v) for k, v in (env or {}).items()})
    return LaunchSpec(fn, world_size, tuple(args), timeout, pg_timeout, threads, worker_env,
                      stuck_after, idle_after)


def _run(spec: LaunchSpec):
    """Run the workers once (twice if the first never connected): (outcome, seconds)."""
    ctx = _context()
    for attempt in (1, 2):
        started = time.perf_counter()
        outcome = run_workers(ctx, spec, on_started=_LAST.remember)
        # gloo occasionally fails to connect its full mesh on a heavily loaded machine
        # ("connectFullMesh failed ... Connection reset by peer") before any user code
        # ran (pytorch#53270). That says nothing about the lesson: start fresh workers once.
        if attempt == 1 and outcome.only_failed_joining():
            continue
        break
    return outcome, time.perf_counter() - started


class _LastLaunch:
    """The pids of this process's most recent launch, kept for `last_worker_pids()`; the
    supervisor reports them through `remember` as soon as the workers exist."""

    def __init__(self):
        self.pids: tuple = ()

    def remember(self, pids) -> None:
        self.pids = tuple(pids)


_LAST = _LastLaunch()


def last_worker_pids() -> list[int]:
    """PIDs of the most recent launch's workers (tests use it to prove they are gone)."""
    return list(_LAST.pids)


def merge_traces(events_by_rank: dict, stopped_at: float | None = None) -> list:
    """All ranks' events in rank order, times shifted so the first post is at 0.
    `stopped_at`: when the ranks still running were stopped (same clock: perf_counter is
    CLOCK_MONOTONIC, shared by every process of the machine); calls that never completed
    nor failed get it as their `t_stopped`."""
    events = [e for r in sorted(events_by_rank) for e in events_by_rank[r]]
    if events:
        t0 = min(e.t_post for e in events)
        for e in events:
            if stopped_at is not None and e.t_done is None and e.t_error is None:
                e.t_stopped = stopped_at
            e.t_post -= t0
            e.t_done = None if e.t_done is None else e.t_done - t0
            e.t_error = None if e.t_error is None else e.t_error - t0
            e.t_stopped = None if e.t_stopped is None else e.t_stopped - t0
    return events
