"""The worker side of `launch`: what each rank's process does, start to end.

    join the rendezvous -> init the gloo group -> Joined -> fn(rank, world_size, *args)
    -> Returned / Failed -> wait for Release (or to be killed) -> exit

A listener thread answers StatusRequests while the main thread sits inside a gloo call
(gloo releases the GIL), which is exactly when the parent wants to know where it is.
"""
from __future__ import annotations

import datetime
import io
import os
import pickle
import signal
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

import labs.harness
from labs.harness.ranks import tracing
from labs.harness.ranks.exercises import unsolved_of
from labs.harness.launch.messages import (Failed, Frame, Joined, Phase, RankStatus, Release,
                                          Returned, StatusReply, StatusRequest)
from labs.harness.launch.rendezvous import join_store
from labs.harness.launch.spec import JOIN_TIMEOUT, RELEASE_WAIT_IN_WORKER


def exc_summary(exc) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# Files under this folder are shown relative to it (labs/ring.py, solutions/ring.py).
COURSE_ROOT = str(labs.harness.COURSE_ROOT)
# Never the reader's line: the harness, and a virtualenv inside the course folder (.venv).
_NOT_READERS = (os.path.join(COURSE_ROOT, "labs", "harness") + os.sep, sys.prefix + os.sep)


def frames_of(exc) -> list[Frame]:
    """The traceback of `exc` as Frames, course files relative to the course's folder."""
    frames = []
    for f in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(f.filename)
        if path.startswith(COURSE_ROOT + os.sep):
            path = os.path.relpath(path, COURSE_ROOT)
        frames.append(Frame(path, f.lineno or 0, f.name, (f.line or "").strip()))
    return frames


def status_now(tracer: tracing.Tracer, phase: Phase, main: int | None = None) -> RankStatus:
    """A picklable snapshot of what this rank is blocked in and has in flight; `main`: the
    id of the thread that runs fn (asked from the listener), whose line it names."""
    blocked, now = tracer.blocked_in, time.perf_counter()
    if blocked is None and tracer.failed_in is not None:     # it raised out of the call
        blocked, now = tracer.failed_in, tracer.failed_in.t_error
    return RankStatus(rank=tracer.rank, phase=phase, blocked_in=blocked,
                      blocked_for=(now - blocked.t_post) if blocked else 0.0,
                      outstanding=tracer.outstanding(),
                      last=tracer.events[-1] if tracer.events else None, note=tracer.note,
                      waiting=tracer.blocked_in is not None or tracer.raw_waits > 0,
                      progress=(len(tracer.events), tracer.blocked_in and tracer.blocked_in.seq,
                                tracer.raw_waits, tracer.raw_waits_done,
                                sum(e.t_done is not None for e in tracer.events)),
                      where=_readers_line(main))


def _readers_line(thread: int | None) -> str:
    """'labs/deadlocks.py:207': the innermost frame of `thread` that is the reader's code
    (not the harness, not torch or another installed library), where it sits right now."""
    frame = sys._current_frames().get(thread) if thread is not None else None
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(COURSE_ROOT + os.sep) and not path.startswith(_NOT_READERS) \
                and "site-packages" not in path:
            return f"{os.path.relpath(path, COURSE_ROOT)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class _Channel:
    """The rank's end of its pipe; the main thread and the listener both send on it."""

    def __init__(self, conn):
        self.conn, self.lock = conn, threading.Lock()
        self.released = threading.Event()
        self.phase = Phase.CONNECT
        self.main = threading.get_ident()       # made in the thread that runs fn

    def send(self, message) -> None:
        data = pickle.dumps(message)
        with self.lock:
            self.conn.send_bytes(data)

    def listen(self) -> None:
        """Listener thread: answer status requests; exit if the parent is gone."""
        while True:
            try:
                message = pickle.loads(self.conn.recv_bytes())
            except (EOFError, OSError):
                os._exit(70)    # parent died or closed: never outlive the launch
            if isinstance(message, Release):
                self.released.set()
            elif isinstance(message, StatusRequest):
                status = status_now(tracing.TRACER, self.phase, self.main)
                events = list(tracing.TRACER.events) if message.events else []
                try:
                    self.send(StatusReply(status, events))
                except (OSError, ValueError):
                    os._exit(70)


def _capture_output(out_path):
    """This rank's stdout/stderr go to its own file, at the file-descriptor level so that
    C++ (gloo) messages land there too; the parent replays it in rank order."""
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), write_through=True)


def _join_group(rank, world_size, store_port, pg_timeout):
    store = join_store(store_port, world_size, JOIN_TIMEOUT)
    # Wait in the store until every rank has started, then create the group together:
    # gloo connects its pairs within pg_timeout (and fixes that timeout at creation for
    # every later send/recv), so a rank that started late must not miss it.
    store.set(f"started/{rank}", "1")
    store.wait([f"started/{r}" for r in range(world_size)])
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=pg_timeout))


def _on_interrupt(signum, frame):
    """SIGINT in a worker (a kernel interrupt reaches the kernel's whole process group):
    note where the rank is at once, so that a status asked right now already says it."""
    while frame is not None and (frame.f_code.co_filename.startswith(
            os.path.join(COURSE_ROOT, "labs", "harness")) or "site-packages" in frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None:
        path = os.path.relpath(frame.f_code.co_filename, COURSE_ROOT) \
            if frame.f_code.co_filename.startswith(COURSE_ROOT + os.sep) else frame.f_code.co_filename
        tracing.TRACER.note = tracing.TRACER.note or \
            f"interrupted in {frame.f_code.co_name} ({path}:{frame.f_lineno})"
    raise KeyboardInterrupt


def _interrupted_at(exc) -> str:
    """'interrupted in sleeper (labs/playground.py:12)': the innermost frame outside the
    harness. A kernel interrupt reaches the workers too (Jupyter signals the kernel's whole
    process group); the parent reports it as Interrupted, with this line per rank."""
    frames = [f for f in frames_of(exc) if not f.file.startswith("labs/harness/")]
    if not frames:
        return "interrupted while starting"
    return f"interrupted in {frames[-1].function} ({frames[-1].file}:{frames[-1].line})"


def _returned(rank, value, tracer) -> Returned:
    message = Returned(rank, value, list(tracer.events))
    try:
        pickle.dumps(message)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"rank {rank} returned a {type(value).__name__}, which cannot be "
                        f"sent back to the notebook ({exc_summary(exc)}). Return tensors, "
                        f"numbers, strings, lists or dicts.") from None
    return message


def _failed(rank, exc, tracer, phase) -> Failed:
    """What this rank tells the parent about `exc`, the exception being handled now."""
    status = status_now(tracer, phase)
    interrupted = isinstance(exc, KeyboardInterrupt)
    status.note = status.note or (_interrupted_at(exc) if interrupted else exc_summary(exc))
    return Failed(rank, exc_summary(exc), traceback.format_exc(), phase, status,
                  list(tracer.events), frames_of(exc), unsolved_of(exc), interrupted, str(exc))


def run(rank, spec_bytes, store_port, out_path, conn):
    """The target of every worker process: the launch's LaunchSpec (pickled once by the
    parent, the same bytes for every rank), then what is this rank's own."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the fork server's (leftovers.py)
    _capture_output(out_path)
    channel = _Channel(conn)
    threading.Thread(target=channel.listen, daemon=True).start()
    tracer = tracing.install(rank)
    signal.signal(signal.SIGINT, _on_interrupt)
    try:
        spec = pickle.loads(spec_bytes)
        os.environ.update(spec.env)
        torch.set_num_threads(spec.threads)
        _join_group(rank, spec.world_size, store_port, spec.pg_timeout)
        channel.send(Joined(rank))
        channel.phase = Phase.RUN
        message = _returned(rank, spec.fn(rank, spec.world_size, *spec.args), tracer)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        message = _failed(rank, exc, tracer, channel.phase)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        channel.send(message)
    except Exception as exc:  # noqa: BLE001
        channel.send(Failed(rank, exc_summary(exc), f"could not send the result: {exc}",
                            channel.phase, status_now(tracer, channel.phase), []))
    # Do not exit (which closes this rank's gloo connections) before every rank is done:
    # a peer still receiving would fail with "Connection closed by peer" instead of
    # finishing, or instead of reporting what it really waits for. After an error the
    # parent asks the others what they wait for, then kills everyone.
    failed = isinstance(message, Failed)
    channel.released.wait(None if failed else RELEASE_WAIT_IN_WORKER)
    if not failed and dist.is_initialized():
        dist.destroy_process_group()
    conn.close()
    # Skip interpreter teardown: gloo's threads and the TCPStore are already done with,
    # and os._exit avoids atexit handlers inherited from the fork server.
    os._exit(0)
