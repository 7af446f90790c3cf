"""Start real gloo workers from a notebook cell (or a test, or a script).

    from labs import launch
    results = launch(fn, world_size=4, args=(...), timeout=20.0)

`fn(rank, world_size, *args)` runs in `world_size` fresh processes with the default gloo
process group initialised; `launch` returns their return values in rank order. How:

  * processes come from `torch.multiprocessing` with the *forkserver* start method and
    torch preloaded in the server: the first launch pays for importing torch once
    (about 1.5 s), every later launch forks a ready process (about 0.1 s for 4 ranks).
    Plain spawn re-imports torch in every child, every time (3.6-5.7 s).
  * each launch gets a private rendezvous: a TCPStore that the parent opens on a port the
    OS picks, so parallel launches (two notebooks, parallel tests) never collide.
  * each worker's stdout/stderr goes to its own file and is replayed after the run in
    rank order, so a cell prints the same thing every time.
  * a worker exception, a worker death and a hang each become one clear exception here;
    in every case all workers are killed and reaped before it reaches you.
"""
from __future__ import annotations

import datetime
import importlib
import io
import multiprocessing.connection
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as tmp

from labs.harness import tracing

MAX_WORLD_SIZE = 32
# How long the ranks may take to start and join the group. The launch `timeout` counts
# from the moment every rank has joined, so a loaded machine that starts workers slowly
# never turns into a false HangError (or eats the time a hang demo is meant to show).
JOIN_TIMEOUT = 60.0
START_METHOD = "forkserver"
# What the fork server imports once; lesson modules are *not* preloaded, so a reader's
# edits to labs/*.py are picked up by the next launch without restarting the kernel.
# torch._dynamo: DistributedDataParallel's constructor imports it (about 3 s per process,
# 13-19 s for 4 workers on a loaded 2-core machine); imported once here, every DDP launch
# (lessons 06-08) forks it ready.
PRELOAD = ["torch", "torch.distributed", "torch._dynamo", "labs.harness.launcher"]
# Environment variables a launch forwards to its workers at call time (the fork server's
# own environment is frozen when it starts).
FORWARDED_ENV_PREFIX = "P2P_COURSE_"

_GLOO_TIMEOUT = re.compile(r"[Tt]imed out|timeout caused pair closure|Timeout")
_COLLATERAL = re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe")


class WorkerError(RuntimeError):
    """One or more workers raised or died.

    `.ranks` (the ranks that failed first), `.causes` (rank -> "ValueError: ..." or
    "was killed by signal SIGABRT"), `.tracebacks` (rank -> text), `.statuses`,
    `.outputs` (rank -> what it printed), `.trace` (the calls each rank made up to then).
    """

    def __init__(self, message, ranks=(), tracebacks=None, statuses=None, causes=None):
        super().__init__(message)
        self.ranks = list(ranks)
        self.tracebacks = tracebacks or {}
        self.statuses = statuses or {}
        self.causes = causes or {}

    def brief(self) -> str:
        """The same facts without tracebacks, paths or timings: stable, for notebooks."""
        return "\n".join(f"rank {r}: {_strip_paths(self.causes.get(r, ''))}" for r in self.ranks)


class HangError(TimeoutError):
    """The workers stopped making progress. `.statuses`: rank -> what it was blocked in;
    `.outputs` and `.trace` as for WorkerError (the trace shows the calls that never ended)."""

    def __init__(self, message, statuses=None):
        super().__init__(message)
        self.statuses = statuses or {}

    def brief(self) -> str:
        """Per rank, the call it was blocked in, without timings: stable, for notebooks."""
        return "\n".join(_blocked_lines(self.statuses, timings=False))


def _strip_paths(text: str) -> str:
    """'[/__w/.../gloo/transport/tcp/pair.cc:801] msg' -> '[gloo/transport/tcp/pair.cc] msg'."""
    text = re.sub(r"\[[^\]]*?(gloo/[^\]:]+)(:\d+)?\]", r"[\1]", text)
    return re.sub(r"\[127\.0\.0\.1\]:\d+", "[127.0.0.1]:<port>", text)


class Results(list):
    """The per-rank return values, in rank order (a plain list), plus what the run left:
    `.outputs` (rank -> captured text), `.trace` (list of `tracing.Event`), `.seconds`."""

    outputs: dict
    trace: list
    seconds: float


# ----------------------------------------------------------------------------------------
# Worker side
# ----------------------------------------------------------------------------------------

def _send(conn, kind, payload):
    conn.send_bytes(pickle.dumps((kind, payload)))


def _listen_to_parent(conn, send_lock, all_done, state):
    """Background thread: answer status requests; exit the process if the parent is gone.

    It runs while the main thread sits inside a gloo call (gloo releases the GIL), which
    is exactly when the parent wants to know what the rank is blocked in.
    """
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            os._exit(70)    # parent died or closed: never outlive the launch
        if message == b"all done":
            all_done.set()
            continue
        with send_lock:
            try:
                status = tracing.TRACER.status()
                status["phase"] = state["phase"]
                status["events"] = [e.as_dict() for e in list(tracing.TRACER.events)]
                _send(conn, "status", status)
            except (OSError, ValueError):
                os._exit(70)


def _worker(rank, world_size, fn_bytes, args_bytes, store_port, pg_timeout, threads, env,
            out_path, conn):
    # Own output file, at the file-descriptor level so C++ (gloo) messages land there too.
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)
    os.environ.update(env)
    torch.set_num_threads(threads)
    send_lock = threading.Lock()
    all_done = threading.Event()
    state = {"phase": "connect"}
    threading.Thread(target=_listen_to_parent, args=(conn, send_lock, all_done, state),
                     daemon=True).start()
    tracer = tracing.install(rank)
    try:
        fn = pickle.loads(fn_bytes)
        args = pickle.loads(args_bytes)
        store = dist.TCPStore("127.0.0.1", store_port, world_size, is_master=False,
                              timeout=datetime.timedelta(seconds=JOIN_TIMEOUT))
        # Wait in the store until every rank has started, then create the group together:
        # gloo connects its pairs within pg_timeout (it fixes that timeout at creation for
        # every later send/recv too), and a rank that started late must not miss it.
        store.set(f"started/{rank}", "1")
        store.wait([f"started/{r}" for r in range(world_size)])
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=pg_timeout))
        with send_lock:
            _send(conn, "joined", None)      # the launch timeout starts counting now
        state["phase"] = "run"
        value = fn(rank, world_size, *args)
        try:
            payload = pickle.dumps(("ok", value, [e.as_dict() for e in tracer.events]))
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"rank {rank} returned a {type(value).__name__}, which cannot be "
                            f"sent back to the notebook ({exc_summary(exc)}). Return tensors, "
                            f"numbers, strings, lists or dicts.") from None
        failed = False
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        failed = True
        status = tracer.status()
        status["error"] = f"{type(exc).__name__}: {exc}"
        payload = pickle.dumps(("error", traceback.format_exc(), status,
                                [e.as_dict() for e in tracer.events], exc_summary(exc),
                                state["phase"]))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    with send_lock:
        try:
            conn.send_bytes(payload)
        except Exception as exc:  # noqa: BLE001
            conn.send_bytes(pickle.dumps(("error", f"could not send the result: {exc}",
                                          tracer.status(), [], str(exc))))
    # Do not exit (which closes this rank's gloo connections) before every rank is done:
    # a peer still connecting or receiving would fail with "Connection closed by peer"
    # instead of finishing, or instead of reporting what it really waits for. After an
    # error the parent asks the others, then kills everyone; after success it says so.
    all_done.wait(None if failed else 600)
    if not failed and dist.is_initialized():
        dist.destroy_process_group()
    conn.close()
    # Skip interpreter teardown: gloo's threads and the TCPStore are already done with,
    # and os._exit avoids atexit handlers inherited from the fork server.
    os._exit(0)


def exc_summary(exc) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# ----------------------------------------------------------------------------------------
# Parent side
# ----------------------------------------------------------------------------------------

_context_lock = threading.Lock()
_context_ready = False


def _context():
    """The forkserver context, started and warmed up once per (kernel) process."""
    global _context_ready
    ctx = tmp.get_context(START_METHOD)
    with _context_lock:
        if not _context_ready:
            ctx.set_forkserver_preload(PRELOAD)
            # Fork one no-op child now, so the first real launch's deadline does not
            # include the fork server importing torch.
            p = ctx.Process(target=_noop)
            p.start()
            p.join(120)
            _context_ready = True
    return ctx


def _noop():
    pass


def _check_fn(fn):
    if not callable(fn):
        raise TypeError(f"launch() needs a function to run on every rank, got {fn!r}.")
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    where = ("It is defined in the notebook (module __main__), and worker processes cannot "
             "import a notebook." if module == "__main__" else
             "It is a lambda or a nested function, which worker processes cannot import."
             if "<" in qualname else "")
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
        raise TypeError(
            f"launch() cannot start {getattr(fn, '__name__', fn)!r} in worker processes. "
            f"{where} Put the function in a module (for your own experiments: "
            f"labs/playground.py), then `from labs.playground import {getattr(fn, '__name__', 'fn')}` "
            f"and launch that. Workers import functions by name; see notebook 00.")


def _check_args(fn, world_size, args, timeout):
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        raise TypeError(f"world_size must be an int between 1 and {MAX_WORLD_SIZE}, "
                        f"got {world_size!r}.")
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise ValueError(f"world_size must be between 1 and {MAX_WORLD_SIZE}, got {world_size}. "
                         f"This machine has {os.cpu_count()} cores; 2-4 ranks are plenty "
                         f"for every lesson.")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args must be a tuple of extra arguments for {fn.__name__}, "
                        f"e.g. args=(1024,), got {type(args).__name__}.")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    for i, arg in enumerate(args):
        try:
            pickle.dumps(arg)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(
                f"args[{i}] ({type(arg).__name__}) cannot be sent to worker processes: "
                f"{exc_summary(exc)}. Pass plain data (numbers, strings, tensors, lists, "
                f"dicts) and build anything else (models, locks, files) inside the worker."
            ) from None


def launch(fn, world_size: int = 2, args=(), timeout: float = 30.0, *,
           pg_timeout: float | None = None, threads: int = 1, env: dict | None = None,
           quiet: bool = False) -> Results:
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
    """
    _check_fn(fn)
    _check_args(fn, world_size, args, timeout)
    pg_timeout = pg_timeout if pg_timeout is not None else max(0.5, 0.75 * timeout)
    worker_env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIX)}
    worker_env.update({str(k): str(v) for k, v in (env or {}).items()})

    ctx = _context()
    for attempt in (1, 2):
        started = time.perf_counter()
        outcome, outputs = _run_workers(ctx, fn, world_size, args, timeout, pg_timeout,
                                        threads, worker_env)
        # gloo occasionally fails to connect its full mesh on a heavily loaded machine
        # ("connectFullMesh failed ... Connection reset by peer", or a rank that started
        # later than pg_timeout) before any user code ran (pytorch#53270). That says
        # nothing about the lesson: start fresh workers once.
        if attempt == 1 and _only_failed_connecting(outcome):
            continue
        break
    seconds = time.perf_counter() - started
    if not quiet:
        _replay(outputs)
    try:
        _raise_if_failed(outcome, outputs, timeout, pg_timeout, seconds)
    except (WorkerError, HangError) as exc:
        exc.outputs = outputs   # everything the workers printed, C++ log lines included
        # What each rank did up to the failure (ranks that died without a word: nothing).
        events = dict(outcome["events"])
        for r, status in outcome["statuses"].items():
            events.setdefault(r, status.pop("events", []))
        exc.trace = _merge_traces(events)
        raise

    results = Results(outcome["values"][r] for r in range(world_size))
    outputs = {r: outputs.get(r, "") for r in range(world_size)}
    results.outputs, results.seconds = outputs, seconds
    results.trace = _merge_traces(outcome["events"])
    return results


def _run_workers(ctx, fn, world_size, args, timeout, pg_timeout, threads, worker_env):
    """One attempt: start the workers, supervise them, stop them. Returns (outcome, outputs)."""
    out_dir = tempfile.mkdtemp(prefix="p2p-launch-")
    # The rendezvous: a store only this launch knows the port of.
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True,
                          wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=JOIN_TIMEOUT))
    pipes = [ctx.Pipe(duplex=True) for _ in range(world_size)]
    procs = []
    started = time.perf_counter()
    try:
        for rank in range(world_size):
            p = ctx.Process(
                target=_worker, daemon=True, name=f"p2p-rank{rank}",
                args=(rank, world_size, pickle.dumps(fn), pickle.dumps(tuple(args)),
                      store.port, pg_timeout, threads, worker_env,
                      os.path.join(out_dir, f"rank{rank}.out"), pipes[rank][1]))
            p.start()
            pipes[rank][1].close()   # only the child holds its end: EOF tells it we are gone
            procs.append(p)
        _LAST["pids"] = [p.pid for p in procs]
        outcome = _supervise(procs, [pp[0] for pp in pipes], started, timeout)
        outputs = _read_outputs(out_dir, world_size)
    finally:
        _stop(procs)
        for parent_end, _ in pipes:
            parent_end.close()
        shutil.rmtree(out_dir, ignore_errors=True)
        del store
    return outcome, outputs


def _only_failed_connecting(outcome) -> bool:
    """Every failure happened while joining the group, before any user code ran."""
    errors = outcome["errors"]
    return bool(errors) and not outcome["deaths"] and not outcome["hang"] and all(
        e.get("phase") == "connect" for e in errors.values())


_LAST: dict = {"pids": []}


def last_worker_pids() -> list[int]:
    """PIDs of the most recent launch's workers (tests use it to prove they are gone)."""
    return list(_LAST["pids"])


def _supervise(procs, conns, started, timeout):
    """Collect each rank's result; stop at the first failure (+ a short grace) or deadline.

    The deadline is JOIN_TIMEOUT after the start until every rank has joined the group,
    then `timeout` after that moment.
    """
    n = len(procs)
    joined = set()
    deadline = started + JOIN_TIMEOUT
    values, errors, events, statuses, deaths = {}, {}, {}, {}, {}
    first_failure = None
    grace = 0.5
    pending = set(range(n))
    sentinel_rank = {p.sentinel: r for r, p in enumerate(procs)}
    conn_rank = {id(c): r for r, c in enumerate(conns)}
    hang_reason = None
    while pending:
        now = time.perf_counter()
        if first_failure is not None and now >= first_failure + grace:
            break
        if now >= deadline:
            hang_reason = "deadline" if len(joined) == n else "join"
            break
        wait_until = deadline if first_failure is None else min(deadline, first_failure + grace)
        waitables = [conns[r] for r in pending] + [procs[r].sentinel for r in pending]
        ready = multiprocessing.connection.wait(waitables, timeout=max(0.0, wait_until - now))
        for obj in ready:
            if obj in sentinel_rank:
                rank = sentinel_rank[obj]
                if rank not in pending or conns[rank].poll():
                    continue    # its result is waiting in the pipe: read that first
                procs[rank].join(0.1)
                deaths[rank] = procs[rank].exitcode
                pending.discard(rank)
                first_failure = first_failure or time.perf_counter()
                continue
            rank = conn_rank[id(obj)]
            try:
                kind, *rest = pickle.loads(obj.recv_bytes())
            except (EOFError, OSError):   # it died without a word: how, the exit code says
                procs[rank].join(1.0)
                deaths[rank] = procs[rank].exitcode
                pending.discard(rank)
                first_failure = first_failure or time.perf_counter()
                continue
            if kind == "joined":
                joined.add(rank)
                if len(joined) == n:
                    deadline = time.perf_counter() + timeout
                continue
            if kind == "ok":
                values[rank], events[rank] = rest[0], rest[1]
            elif kind == "error":
                errors[rank] = {"traceback": rest[0], "summary": rest[3],
                                "phase": rest[4] if len(rest) > 4 else "run"}
                statuses[rank], events[rank] = rest[1], rest[2]
                first_failure = first_failure or time.perf_counter()
            else:
                continue        # a late status reply
            pending.discard(rank)
    if pending:
        # Ask the ranks that are still running what they are blocked in.
        statuses.update(_ask_status(procs, conns, pending))
    elif not errors and not deaths:
        _release(procs, conns)
    return {"values": values, "errors": errors, "events": events, "statuses": statuses,
            "deaths": deaths, "pending": sorted(pending), "hang": hang_reason}


def _release(procs, conns, wait=2.0):
    """Every rank has returned: let them destroy the group and exit on their own."""
    for c in conns:
        try:
            c.send_bytes(b"all done")
        except OSError:
            pass
    until = time.perf_counter() + wait
    for p in procs:
        p.join(max(0.0, until - time.perf_counter()))


def _ask_status(procs, conns, ranks, wait=1.0):
    answers = {}
    for r in ranks:
        try:
            conns[r].send_bytes(b"status")
        except OSError:
            pass
    until = time.perf_counter() + wait
    while len(answers) < len(ranks) and time.perf_counter() < until:
        todo = [conns[r] for r in ranks if r not in answers]
        for c in multiprocessing.connection.wait(todo, timeout=max(0.0, until - time.perf_counter())):
            r = conns.index(c)
            try:
                kind, *rest = pickle.loads(c.recv_bytes())
            except (EOFError, OSError):
                answers[r] = {"rank": r, "blocked_in": None, "note": "exited"}
                continue
            if kind == "status":
                answers[r] = rest[0]
    for r in ranks:
        answers.setdefault(r, {"rank": r, "blocked_in": None,
                               "note": "did not answer (stuck outside Python, or not started)"})
    return answers


def _stop(procs):
    """Kill what is still alive and reap everything: no orphans, no zombies."""
    for p in procs:
        if p.exitcode is None:
            try:
                p.kill()
            except (OSError, ValueError, AttributeError):
                pass
    for p in procs:
        try:
            p.join(5)
        except (OSError, ValueError, AssertionError):
            pass


def _read_outputs(out_dir, world_size):
    outputs = {}
    for r in range(world_size):
        try:
            with open(os.path.join(out_dir, f"rank{r}.out"), errors="replace") as f:
                outputs[r] = f.read()
        except FileNotFoundError:
            pass    # the worker never started (see _raise_if_failed)
    return outputs


# C++ log lines from gloo/c10d ("[E1130 02:28:04.344 ProcessGroupGloo.cpp:67] ..."). When one
# rank fails, its peers log connection errors at racy moments; the exception already says
# what happened, so the replay leaves these out (they stay in `.outputs`).
_CPP_LOG_LINE = re.compile(r"^\[[EWIF]\d{4} \d\d:\d\d:\d\d")


def _replay(outputs):
    for r in sorted(outputs):
        for line in outputs[r].splitlines():
            if not _CPP_LOG_LINE.match(line):
                print(f"[rank {r}] {line}")
    sys.stdout.flush()


def _merge_traces(events_by_rank):
    events = [tracing.Event(**e) for r in sorted(events_by_rank) for e in events_by_rank[r]]
    if events:
        t0 = min(e.t_post for e in events)
        for e in events:
            e.t_post -= t0
            e.t_done = None if e.t_done is None else e.t_done - t0
    return events


def _signal_name(code):
    if code is None:
        return "was killed"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code} without returning"


def _blocked_lines(statuses, timings=True):
    lines = []
    for r in sorted(statuses):
        s = statuses[r]
        if s.get("blocked_in"):
            how_long = f" {s['blocked_for']:.1f} s" if timings else ""
            line = f"  rank {r}: blocked{how_long} in {s['blocked_in']}"
        elif s.get("note"):
            line = f"  rank {r}: {s['note']}"
        elif s.get("phase") == "connect":
            line = f"  rank {r}: still starting or joining the process group"
        else:
            last = s.get("last")
            line = (f"  rank {r}: not inside a torch.distributed call "
                    + (f"(its last call: {last})" if last else "(it had made none)"))
        if s.get("outstanding"):
            line += "; posted, not completed: " + ", ".join(s["outstanding"])
        lines.append(line)
    return lines


def _raise_if_failed(outcome, outputs, timeout, pg_timeout, seconds):
    errors, deaths, statuses = outcome["errors"], outcome["deaths"], outcome["statuses"]
    gloo_timeouts = {r for r, e in errors.items() if _GLOO_TIMEOUT.search(e["summary"])}
    collateral = {r for r, e in errors.items() if _COLLATERAL.search(e["summary"])}
    if outcome["hang"] or (gloo_timeouts and not deaths
                           and set(errors) <= gloo_timeouts | collateral):
        why = (f"not every rank joined the process group within {JOIN_TIMEOUT:g} s"
               if outcome["hang"] == "join" else
               f"no result after the launch timeout ({timeout:g} s)" if outcome["hang"] else
               f"gloo's timeout ({pg_timeout:g} s) fired in rank(s) "
               f"{', '.join(map(str, sorted(gloo_timeouts)))}")
        for r in gloo_timeouts | collateral:
            statuses[r]["outstanding"] = statuses[r].get("outstanding", [])
            if not statuses[r].get("blocked_in"):
                statuses[r]["note"] = errors[r]["summary"]
        msg = "\n".join([f"the workers stopped making progress: {why}.",
                         *_blocked_lines(statuses),
                         "All workers were stopped. A gloo pair that timed out cannot be "
                         "reused, so the next launch starts fresh workers."])
        raise HangError(msg, statuses)
    if errors or deaths:
        # A rank that fails takes its connections down with it; its peers then fail with
        # "Connection closed by peer". Name the cause first; peers' tracebacks are noise.
        if collateral == set(errors) and not deaths:
            collateral = set()
        ranks = sorted((set(errors) | set(deaths)) - collateral)
        parts = []
        for r in ranks:
            if r in errors:
                parts.append(f"rank {r} raised {errors[r]['summary']}")
            else:
                parts.append(f"rank {r} {_signal_name(deaths[r])}")
                if r not in outputs:
                    parts[-1] += (" before it could run your function (a script that calls "
                                  "launch() must do so under `if __name__ == \"__main__\":`)")
        lines = ["; ".join(parts) + "."]
        for r in ranks:
            if r in errors:
                lines.append(f"--- rank {r} traceback ---\n{errors[r]['traceback'].rstrip()}")
            elif outputs.get(r, "").strip():
                tail = "\n".join(outputs[r].rstrip().splitlines()[-5:])
                lines.append(f"--- rank {r} last output ---\n{tail}")
        if collateral:
            lines.append(f"Then rank(s) {', '.join(map(str, sorted(collateral)))} failed "
                         f"because a peer's connection closed: "
                         f"{errors[min(collateral)]['summary'][:160]}")
        others = {r: s for r, s in statuses.items() if r not in ranks and r not in collateral}
        if others:
            lines.append("The other ranks were stopped while:")
            lines.extend(_blocked_lines(others))
        causes = {r: errors[r]["summary"] if r in errors else _signal_name(deaths[r])
                  for r in ranks}
        raise WorkerError("\n".join(lines), ranks,
                          {r: e["traceback"] for r, e in errors.items()}, statuses, causes)
