"""The parent side of one launch attempt: start the workers, watch them, stop them.

`run_workers` returns an `Attempt`: what each rank returned, raised or died of, and, if
the launch hung or failed, what the others were blocked in when they were stopped.
Whatever happens, every worker is killed and reaped before it returns.
"""
from __future__ import annotations

import dataclasses
import inspect
import multiprocessing.connection
import os
import pickle
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from labs.harness.launch import worker
from labs.harness.launch.errors import Interrupted
from labs.harness.launch.messages import (Failed, Hang, Idle, Joined, Phase, RankStatus,
                                          Release, Returned, StatusReply, StatusRequest)
from labs.harness.launch.output import read_outputs
from labs.harness.launch.proc_stats import (bytes_moved, core_wait_seconds, cpu_seconds,
                                             main_thread_cpu_seconds)
from labs.harness.ranks.tracing import RECEIVES, SENDS
from labs.harness.launch.rendezvous import open_store
from labs.harness.launch.spec import (BUSY_CPU_SECONDS, DEATH_REAP, GRACE, JOIN_TIMEOUT,
                                      KILL_REAP, PROGRESS_CAP, RELEASE_WAIT, STARVED_SHARE,
                                      SPIN_CPU_SECONDS, STATUS_WAIT, STATUS_WAIT_INTERRUPTED,
                                      STUCK_POLL, STUCK_QUIET_BYTES, LaunchSpec)


@dataclass
class Attempt:
    """One attempt at a launch, as it ended (`launch` makes a second one only when every
    failure happened while joining)."""

    values: dict = field(default_factory=dict)      # rank -> returned value
    failures: dict = field(default_factory=dict)    # rank -> Failed
    deaths: dict = field(default_factory=dict)      # rank -> exit code (negative: signal)
    statuses: dict = field(default_factory=dict)    # rank -> RankStatus when stopped
    events: dict = field(default_factory=dict)      # rank -> its trace
    hang: Hang | None = None     # which deadline a hung attempt missed
    stuck_for: float = 0.0       # Hang.STUCK: how long every rank sat waiting, nothing moving
    no_peer: str = ""            # Hang.NO_PEER: "rank 0 waits in recv from rank -1 ..."
    idle_for: dict = field(default_factory=dict)    # Hang.IDLE: rank -> Idle
    waited: float = 0.0          # the other hangs: the seconds of the deadline that passed
    stopped_at: float | None = None     # perf_counter when the ranks still running were stopped
    outputs: dict = field(default_factory=dict)     # rank -> what it printed
    pids: list = field(default_factory=list)        # the workers' pids, in rank order

    def only_failed_joining(self) -> bool:
        """Every failure happened while joining the group, before any user code ran."""
        return bool(self.failures) and not self.deaths and not self.hang and all(
            f.phase == Phase.CONNECT for f in self.failures.values())


def run_workers(ctx, spec: LaunchSpec, on_started=None) -> Attempt:
    """One attempt: start `spec.world_size` workers on a private rendezvous, supervise,
    stop. `on_started(pids)` is called as soon as every worker exists (before anything
    can fail), so a caller can account for them even if this raises (Interrupted)."""
    out_dir = tempfile.mkdtemp(prefix="p2p-launch-")
    # The rendezvous: a store only this launch knows the port of, on loopback only.
    store = open_store(spec.world_size, JOIN_TIMEOUT)
    pipes = [ctx.Pipe(duplex=True) for _ in range(spec.world_size)]
    procs = []
    started = time.perf_counter()
    try:
        _start_workers(ctx, spec, store.port, out_dir, pipes, procs)
        if on_started is not None:
            on_started([p.pid for p in procs])
        supervisor = _Supervisor(procs, [pp[0] for pp in pipes])
        try:
            outcome = supervisor.watch(started, spec.timeout, spec.stuck_after,
                                       spec.idle_after, _file_of(spec.fn))
        except KeyboardInterrupt:
            raise _interrupted(supervisor, procs, pipes) from None
        outcome.outputs = read_outputs(out_dir, spec.world_size)
        outcome.pids = [p.pid for p in procs]
    finally:
        stop(procs)
        for parent_end, _ in pipes:
            parent_end.close()
        shutil.rmtree(out_dir, ignore_errors=True)
        del store
    return outcome


def _start_workers(ctx, spec, port, out_dir, pipes, procs) -> None:
    """Start one process per rank, each appended to `procs` as soon as it exists (so the
    caller stops every one started, even if a later start fails)."""
    spec_bytes = pickle.dumps(spec)
    for rank in range(spec.world_size):
        p = ctx.Process(
            target=worker.run, daemon=True, name=f"p2p-rank{rank}",
            args=(rank, spec_bytes, port, os.path.join(out_dir, f"rank{rank}.out"),
                  pipes[rank][1]))
        p.start()
        pipes[rank][1].close()   # only the child holds its end: EOF tells it we are gone
        procs.append(p)


def _interrupted(supervisor, procs, pipes) -> Interrupted:
    """You pressed stop (in this process, or a worker was interrupted: Jupyter signals the
    kernel's whole process group, and during a widget's callback only the workers may see
    it): where each rank was. The caller then stops them all."""
    others = [r for r in range(len(procs)) if r not in supervisor.interrupted]
    replies = ask_status(procs, [pp[0] for pp in pipes], others, wait=STATUS_WAIT_INTERRUPTED)
    statuses = {**{r: reply.status for r, reply in replies.items()}, **supervisor.interrupted}
    return Interrupted(dict(sorted(statuses.items())))


class _Supervisor:
    def __init__(self, procs, conns):
        self.procs, self.conns = procs, conns
        self.outcome = Attempt()
        self.pending = set(range(len(procs)))
        self.joined = set()
        self.first_failure = None
        self.interrupted = {}           # rank -> RankStatus: a KeyboardInterrupt in the worker

    def watch(self, started, timeout, stuck_after=None, idle_after=None, worker_file=""):
        """Collect each rank's result; stop at the first failure (+ GRACE) or the deadline:
        JOIN_TIMEOUT after the start until every rank has joined, then `timeout`; with
        `stuck_after`, also once every rank still running has sat waiting that long, and
        the timeout counts from the last sign of progress (at most PROGRESS_CAP timeouts);
        with `idle_after` too, once one rank sat that long outside torch.distributed in
        code the worker function (in `worker_file`) called."""
        deadline, joined_at = started + JOIN_TIMEOUT, None
        # a sentinel is ready when its worker exits
        sentinels = {p.sentinel: r for r, p in enumerate(self.procs)}
        watch = _StuckWatch(stuck_after, idle_after, worker_file) if stuck_after else None
        while self.pending:
            now = time.perf_counter()
            if watch and joined_at is not None:
                deadline = min(joined_at + PROGRESS_CAP * timeout, watch.progressed + timeout)
            if self.first_failure is not None and now >= self.first_failure + GRACE:
                break
            if now >= deadline:
                self._missed(deadline, joined_at, timeout, watch)
                break
            if watch and joined_at is not None and now >= watch.next_poll:
                if self._stuck(watch, now):
                    break
                continue
            until = deadline if self.first_failure is None else min(deadline, self.first_failure + GRACE)
            if watch and joined_at is not None:
                until = min(until, watch.next_poll)
            if self._take_ready(until - now, sentinels):     # every rank has joined
                joined_at = time.perf_counter()
                deadline = joined_at + timeout
                if watch:
                    watch.progressed = joined_at
        if self.pending:
            self.outcome.stopped_at = time.perf_counter()
            for rank, reply in ask_status(self.procs, self.conns, self.pending).items():
                self.outcome.statuses[rank] = reply.status
                self.outcome.events.setdefault(rank, reply.events)
        elif not self.outcome.failures and not self.outcome.deaths:
            release(self.procs, self.conns)
        return self.outcome

    def _take_ready(self, wait, sentinels) -> bool:
        """Wait up to `wait` s for messages and deaths; take them. True once all joined."""
        all_joined = False
        ready = multiprocessing.connection.wait(
            [self.conns[r] for r in self.pending] + [self.procs[r].sentinel for r in self.pending],
            timeout=max(0.0, wait))
        for obj in ready:
            if obj in sentinels:
                rank = sentinels[obj]
                if rank in self.pending and not self.conns[rank].poll():
                    self._died(rank)   # else: its result is in the pipe, read that first
            elif self._receive(self.conns.index(obj)) == "all joined":
                all_joined = True
        return all_joined

    def _missed(self, deadline, joined_at, timeout, watch):
        """Say which deadline passed: joining, the launch timeout, or (with a watch) the
        timeout without progress or the cap."""
        outcome = self.outcome
        if joined_at is None:
            outcome.hang, outcome.waited = Hang.JOIN, JOIN_TIMEOUT
        elif watch and deadline < joined_at + PROGRESS_CAP * timeout:
            outcome.hang, outcome.waited = Hang.QUIET, deadline - watch.progressed
        else:
            outcome.hang, outcome.waited = Hang.DEADLINE, deadline - joined_at

    def _stuck(self, watch, now) -> bool:
        """Poll the ranks for `watch`; True (and the outcome says so) once they are stuck."""
        moved = {r: bytes_moved(self.procs[r].pid) for r in self.pending}
        cpu = {r: cpu_seconds(self.procs[r].pid) for r in self.pending}
        waited = {r: core_wait_seconds(self.procs[r].pid) for r in self.pending}
        statuses = self._poll_statuses()
        no_peer = not_a_rank(statuses, len(self.procs))
        if no_peer:        # it can never complete: no need to watch it sit
            self.outcome.hang, self.outcome.no_peer = Hang.NO_PEER, no_peer
            return True
        # the body runs on the main thread (gloo's threads moving a posted message are not it)
        ran = {r: main_thread_cpu_seconds(self.procs[r].pid) for r in self.pending}
        idle = watch.idle(statuses, now, ran, waited)
        if idle:           # a sleep or a loop outside torch.distributed: it says where
            self.outcome.hang, self.outcome.idle_for = Hang.IDLE, idle
            return True
        stuck_for = watch.seen(statuses, self.pending, now, moved, cpu)
        if stuck_for is not None:
            self.outcome.hang, self.outcome.stuck_for = Hang.STUCK, stuck_for
        return stuck_for is not None

    def _poll_statuses(self) -> dict:
        """Ask the ranks still running for their status alone; rank -> RankStatus. Any
        other message that arrives meanwhile (a result, a failure) is taken as usual."""
        ranks = sorted(self.pending)
        for r in ranks:
            try:
                self.conns[r].send_bytes(pickle.dumps(StatusRequest(events=False)))
            except OSError:
                pass
        statuses, until = {}, time.perf_counter() + STATUS_WAIT
        while self.pending - set(statuses) and time.perf_counter() < until:
            todo = [self.conns[r] for r in self.pending if r not in statuses]
            for c in multiprocessing.connection.wait(todo, max(0.0, until - time.perf_counter())):
                rank = self.conns.index(c)
                try:
                    message = pickle.loads(c.recv_bytes())
                except (EOFError, OSError):
                    self._died(rank)
                    continue
                if isinstance(message, StatusReply):
                    statuses[rank] = message.status
                else:
                    self._take(rank, message)
        return {r: s for r, s in statuses.items() if r in self.pending}

    def _died(self, rank):
        self.procs[rank].join(DEATH_REAP)
        self.outcome.deaths[rank] = self.procs[rank].exitcode
        self.pending.discard(rank)
        self.first_failure = self.first_failure or time.perf_counter()

    def _receive(self, rank):
        try:
            message = pickle.loads(self.conns[rank].recv_bytes())
        except (EOFError, OSError):   # it died without a word: how, the exit code says
            return self._died(rank)
        return self._take(rank, message)

    def _take(self, rank, message):
        if isinstance(message, Joined):
            self.joined.add(rank)
            return "all joined" if len(self.joined) == len(self.procs) else None
        if isinstance(message, Returned):
            self.outcome.values[rank], self.outcome.events[rank] = message.value, message.events
        elif isinstance(message, Failed):
            if message.interrupted:
                self.interrupted[rank] = message.status
                raise KeyboardInterrupt
            self.outcome.failures[rank] = message
            self.outcome.statuses[rank], self.outcome.events[rank] = message.status, message.events
            self.first_failure = self.first_failure or time.perf_counter()
        else:
            return None               # a late status reply
        self.pending.discard(rank)
        return None


@dataclass
class _Outside:
    """A rank seen outside any call with the same signs: since when, its CPU seconds then,
    and when (with what CPU) it last did work."""

    signs: tuple
    since: float
    cpu: float
    awake: float
    awake_cpu: float


class _StuckWatch:
    """Is every rank still running sitting in a wait, with nothing posted or completed
    anywhere and no bytes moving, for `stuck_after` seconds? That is a deadlock whatever the
    machine's load: a rank that is computing, however slowly, is not waiting, and one whose
    large message is still on its way moves bytes. (gloo's own timeout can only time one
    wait, so on a loaded machine a slow peer looks like a hang.)

    It also keeps `progressed`, the moment of the last sign of progress anywhere: a rank
    posted, completed or finished something, started a case, moved bytes or computed."""

    def __init__(self, stuck_after: float, idle_after: float | None = None,
                 worker_file: str = ""):
        self.stuck_after, self.next_poll = stuck_after, 0.0
        self.idle_after, self.worker_file = idle_after, worker_file
        self.outside = {}   # rank -> _Outside
        self.waited = {}    # rank -> (when, seconds it had waited for a core) at the last poll
        self.since, self.last, self.moved = None, None, {}
        self.progressed = time.perf_counter()
        self.marks = {}     # rank -> (its status's signs, bytes moved, CPU) at `progressed`

    def seen(self, statuses: dict, running: set, now: float, moved: dict,
             cpu: dict | None = None) -> float | None:
        """Take one poll's statuses (`running`: the ranks that should all have answered),
        the bytes each rank has moved and the CPU seconds it has used so far; the seconds
        stuck once that reaches stuck_after."""
        self.next_poll = time.perf_counter() + STUCK_POLL
        self._note_progress(statuses, running, now, moved, cpu or {})
        if not statuses or set(statuses) != set(running) or \
                not all(s.waiting for s in statuses.values()):
            self.since = self.last = None
            return None
        state = {r: s.progress for r, s in statuses.items()}
        moving = any(n - self.moved.get(r, n) >= STUCK_QUIET_BYTES for r, n in moved.items())
        if state != self.last or moving:
            self.since, self.last, self.moved = now, state, moved
            return None
        return now - self.since if now - self.since >= self.stuck_after else None

    def idle(self, statuses: dict, now: float, cpu: dict | None = None,
             waited: dict | None = None) -> dict:
        """rank -> Idle, for the ranks that sit outside any torch.distributed call with the
        same signs (nothing posted, completed or begun) and are either asleep for
        idle_after seconds or have computed SPIN_CPU_SECONDS meanwhile (a loop).
        Asleep means no CPU used (each BUSY_CPU_SECONDS is work) and not waiting for a core
        for most of a poll (`waited`, STARVED_SHARE: a loaded machine; a sleep waits for one
        only as it wakes): a slow body or a starved one is not stuck.
        A rank that has made no call yet is not judged: its start (imports, the grader's
        set-up) waits for a core on a loaded machine; the launch's timeout still covers it.
        Nor is one that sits in the worker function's own file (a grader's checks between
        calls: only the body it calls is known to be small).
        `cpu`: rank -> CPU seconds its main thread (the body's) has used so far; None: not
        Linux, /proc cannot say (then told by the clock, as idle, not as asleep)."""
        own = f"{self.worker_file}:" if self.worker_file else None
        for rank, s in statuses.items():
            used = (cpu or {}).get(rank) or 0.0
            starved = self._starved(rank, now, (waited or {}).get(rank, 0.0))
            kept = self.outside.get(rank)
            if s.waiting or s.phase != Phase.RUN or s.last is None or \
                    (own is not None and s.where.startswith(own)):
                self.outside.pop(rank, None)
            elif kept is None or kept.signs != (s.progress, s.note):
                self.outside[rank] = _Outside((s.progress, s.note), now, used, now, used)
            elif starved or used - kept.awake_cpu >= BUSY_CPU_SECONDS:
                kept.awake, kept.awake_cpu = now, used      # it works: not asleep
        if self.idle_after is None:
            return {}
        told = {}
        for r, kept in sorted(self.outside.items()):
            known = (cpu or {}).get(r)
            spun = 0.0 if known is None else known - kept.cpu
            if r in statuses and (now - kept.awake >= self.idle_after
                                  or spun >= SPIN_CPU_SECONDS):
                told[r] = Idle(now - kept.since, None if known is None else spun,
                               spun >= SPIN_CPU_SECONDS)
        return told

    def _starved(self, rank, now, waited) -> bool:
        """Did `rank` wait for a core for STARVED_SHARE or more of the time since last poll?"""
        before, self.waited[rank] = self.waited.get(rank), (now, waited)
        return before is not None and now > before[0] and \
            waited - before[1] >= STARVED_SHARE * (now - before[0])

    def _note_progress(self, statuses, running, now, moved, cpu):
        signs = {r: (s.progress, s.note) for r, s in statuses.items()}
        marks = self.marks
        progressed = set(marks) != set(running) or any(
            signs.get(r, marks[r][0]) != marks[r][0]
            or moved.get(r, 0) - marks[r][1] >= STUCK_QUIET_BYTES
            or cpu.get(r, 0.0) - marks[r][2] >= BUSY_CPU_SECONDS for r in running)
        if progressed:
            self.progressed = now
            self.marks = {r: (signs.get(r, marks.get(r, (None,))[0]), moved.get(r, 0),
                              cpu.get(r, 0.0)) for r in running}


def not_a_rank(statuses: dict, world_size: int) -> str:
    """'rank 0 waits in recv from rank -1: ...' if a rank sits in (or has posted) a send or
    receive whose peer is not a rank of the group (gloo waits for it until its timeout)."""
    for rank, status in sorted(statuses.items()):
        for event in [status.blocked_in, *status.outstanding]:
            if event is None or event.peer is None or event.op not in SENDS | RECEIVES \
                    or 0 <= event.peer < world_size:
                continue
            way = "send to" if event.op in SENDS else "recv from"
            return (f"rank {rank} waits in {way} rank {event.peer}: not a rank of this group "
                    f"(0..{world_size - 1}): compute the peer with % {world_size}")
    return ""


def release(procs, conns, wait=RELEASE_WAIT):
    """Every rank has returned: let them destroy the group and exit on their own."""
    for c in conns:
        try:
            c.send_bytes(pickle.dumps(Release()))
        except OSError:
            pass
    until = time.perf_counter() + wait
    for p in procs:
        p.join(max(0.0, until - time.perf_counter()))


def ask_status(procs, conns, ranks, wait=STATUS_WAIT) -> dict:
    """Ask the ranks still running what they are blocked in; rank -> StatusReply."""
    answers = {}
    for r in ranks:
        try:
            conns[r].send_bytes(pickle.dumps(StatusRequest()))
        except OSError:
            pass
    until = time.perf_counter() + wait
    while len(answers) < len(ranks) and time.perf_counter() < until:
        todo = [conns[r] for r in ranks if r not in answers]
        for c in multiprocessing.connection.wait(todo, timeout=max(0.0, until - time.perf_counter())):
            r = conns.index(c)
            try:
                reply = pickle.loads(c.recv_bytes())
            except (EOFError, OSError):
                answers[r] = StatusReply(RankStatus(r, note="exited"), [])
                continue
            if isinstance(reply, StatusReply):
                answers[r] = reply
            elif isinstance(reply, Failed) and reply.interrupted:   # it was stopped too
                answers[r] = StatusReply(reply.status, reply.events)
    silent = RankStatus(0, note="did not answer (stuck outside Python, or not started)")
    for r in ranks:
        answers.setdefault(r, StatusReply(dataclasses.replace(silent, rank=r), []))
    return answers


def stop(procs):
    """Kill what is still alive and reap everything: no orphans, no zombies."""
    for p in procs:
        if p.exitcode is None:
            try:
                p.kill()
            except (OSError, ValueError, AttributeError):
                pass
    for p in procs:
        try:
            p.join(KILL_REAP)
        except (OSError, ValueError, AssertionError):
            pass


def _file_of(fn) -> str:
    """`fn`'s source file as a rank's `where` names it (from the course's top), or ""."""
    try:
        path = inspect.getsourcefile(fn) or ""
    except TypeError:
        return ""
    return os.path.relpath(path, worker.COURSE_ROOT) if path else ""
