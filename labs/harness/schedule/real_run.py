"""Running a schedule on real gloo workers, and classifying what really happened.

`run_schedule` is the worker side: it makes one rank's calls with real dist.send/recv/
isend/irecv/batch_isend_irecv/wait, each send carrying a distinctive `payload`.
`execute` is the notebook side: one launch, then ok / silent / hang / error / abort,
and which send each receive really got (read from the data that arrived).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from labs.harness.ranks import tracing
from labs.harness.launch.launcher import HangError, WorkerError, launch
from labs.harness.launch.messages import describe_statuses
from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.language import Batch, batch, irecv, isend, wait
from labs.harness.schedule.program import P2P, Schedule, as_schedule
from labs.harness.schedule.report import check
from labs.harness.ranks.tracing import span

HANG_TIMEOUT = 2.0      # execute(): launch timeout for a schedule predicted to hang


def payload(p: P2P) -> torch.Tensor:
    """The distinctive values op `p` sends: small integers, exact in every dtype, that
    differ from every other send of the schedule (so a receiver can tell which arrived)."""
    values = (p.id * 37 + torch.arange(p.op.numel)) % 113 + 1
    return values.to(getattr(torch, p.op.dtype))


@dataclass
class Arrived:
    """What one rank's receives got: `received` (op id -> its buffer) and `sources` (op id
    -> the rank it came from, for receives that report one)."""

    received: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)


def run_schedule(rank, world_size, schedule, linger=True) -> Arrived:
    """Worker: make this rank's calls of `schedule` for real; return what arrived.
    linger=True: stay alive until every rank has made its calls (see `_linger`)."""
    sched = as_schedule(schedule)
    if sched.world_size != world_size:
        raise ValueError(f"the schedule is for {sched.world_size} ranks, got {world_size}")
    run = _RankRun(sched.ops)
    for ins in sched.instrs[rank]:
        run.call(ins)
    if linger:
        _linger(world_size)
    return run.finish()


class _RankRun:
    """One rank's calls. Every tensor stays referenced until the end: never freed while
    in flight."""

    def __init__(self, ops):
        self.ops, self.works, self.sent, self.arrived = ops, {}, {}, Arrived()

    def tensor(self, p: P2P) -> torch.Tensor:
        if p.send:
            self.sent[p.id] = payload(p)
            return self.sent[p.id]
        buffer = torch.zeros(p.op.numel, dtype=getattr(torch, p.op.dtype))
        self.arrived.received[p.id] = buffer
        return buffer

    def call(self, ins):
        ops = self.ops
        if ins.compute:
            with span(ins.compute.label):
                time.sleep(ins.compute.seconds or 0.0)
        elif ins.collective == "barrier":
            dist.barrier()
        elif ins.collective:
            dist.all_reduce(torch.zeros(1))
        elif isinstance(ins.item, Batch):
            p2p = [dist.P2POp(dist.isend if ops[i].send else dist.irecv, self.tensor(ops[i]),
                              ops[i].peer, tag=ops[i].tag) for i in ins.post]
            self.works.update(zip(ins.post, dist.batch_isend_irecv(p2p)))
        elif ins.post:
            self.post(ops[ins.post[0]])
        for pid in ins.wait if not ins.post else ():
            self.works[pid].wait()

    def post(self, p: P2P):
        if p.op.kind == "send":
            dist.send(self.tensor(p), p.peer, tag=p.tag)
        elif p.op.kind == "recv":
            self.arrived.sources[p.id] = dist.recv(self.tensor(p), p.peer, tag=p.tag)
        elif p.op.kind == "isend":
            self.works[p.id] = dist.isend(self.tensor(p), p.peer, tag=p.tag)
        else:
            self.works[p.id] = dist.irecv(self.tensor(p), p.peer, tag=p.tag)

    def finish(self) -> Arrived:
        for pid, w in self.works.items():
            if not self.ops[pid].send and self.ops[pid].peer is None and w.is_completed():
                self.arrived.sources[pid] = w.source_rank()
        return self.arrived


def _linger(world_size):
    """Stay alive (outside any torch.distributed call) until every rank has finished its
    schedule, so a rank stuck in a receive sees a hang, not a peer that exited."""
    tracing.TRACER.note = "finished its calls, waiting for the other ranks"
    store = dist.distributed_c10d._get_default_store()
    store.add("schedule/finished", 1)
    while store.add("schedule/finished", 0) < world_size:
        time.sleep(0.005)


@dataclass
class RunOutcome:
    """What really happened. `kind`: ok | silent | hang | error | abort; `detail`: stable
    text; `pairs`: recv op id -> send op id, identified from the data that arrived;
    `problems`: what was silently wrong; `trace`: the run's events (None if it failed)."""

    kind: Outcome
    detail: str
    schedule: Schedule
    pairs: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    received: dict = field(default_factory=dict)
    trace: list | None = None
    inexact: set = field(default_factory=set)     # recv ids whose buffer is not exact

    def __str__(self):
        lines = [f"Real run on gloo ({self.schedule.world_size} workers): {self.kind.observed}"]
        if self.kind in (Outcome.OK, Outcome.SILENT):
            ops = self.schedule.ops
            exact = [(q, s) for q, s in sorted(self.pairs.items()) if q not in self.inexact]
            if exact:
                lines.append("  receives that got exactly the message sent:")
            for q, s in exact:
                lines.append(f"    {ops[q].where()} <- {ops[s].where()}")
            lines += [f"  {p}" for p in self.problems]
        else:
            lines += ["  " + line.strip() for line in self.detail.splitlines()]
        return "\n".join(lines)


def _bytes(t):
    return t.contiguous().view(torch.uint8)


def _classify_data(sched: Schedule, values: list) -> tuple:
    """Which send each receive got, read from the bytes in its buffer (the exact message,
    a prefix of one, one reinterpreted, or nothing), and what was silently wrong."""
    ops = sched.ops
    sent = {p.id: payload(p) for p in ops if p.send}
    pairs, problems, received, inexact = {}, [], {}, set()
    for arrived in values:
        received.update(arrived.received)
    for q_id, buf in sorted(received.items()):
        q = ops[q_id]
        exact = [s for s, t in sent.items() if t.dtype == buf.dtype and t.shape == buf.shape
                 and torch.equal(t, buf)]
        if exact:
            pairs[q_id] = exact[0]
            continue
        raw = _bytes(buf)
        inexact.add(q_id)
        if not raw.any():
            problems.append(f"{q.where()}: its buffer was never written")
            continue
        how = None
        for s, t in sent.items():
            tb = _bytes(t)
            if len(tb) <= len(raw) and torch.equal(raw[:len(tb)], tb):
                rest = "" if len(tb) == len(raw) else \
                    f"; the other {len(raw) - len(tb)} bytes were left untouched"
                retyped = (f" reinterpreted as {q.op.dtype}" if t.dtype != buf.dtype else "")
                how = (f"{q.where()}: holds the {len(tb)} bytes of {ops[s].where()}"
                       f"{retyped}{rest}")
                pairs[q_id] = s
                break
        problems.append(how or f"{q.where()}: holds bytes that match no message sent")
    for s in sent:
        if s not in pairs.values():
            problems.append(f"{ops[s].where()}: its message never reached a receive buffer "
                            f"intact")
    return pairs, problems, received, inexact


def _hang_lines(exc) -> str:
    """Per rank: the call it was stuck in, or that it had finished (and was lingering)."""
    return "\n".join(describe_statuses(exc.statuses, timings=False)) or exc.brief()



def execute(schedule, timeout: float | None = None, linger: bool = True) -> RunOutcome:
    """Run `schedule` on real gloo workers (one launch) and classify what happened.

    timeout: None picks HANG_TIMEOUT (2 s) when `check` predicts a hang, else 30 s: a hang
    costs a short wait, a healthy run on a loaded machine gets room. The prediction only
    chooses how long to wait, never what counts as a hang.
    """
    sched = as_schedule(schedule)
    if timeout is None:
        timeout = HANG_TIMEOUT if check(sched).outcome == Outcome.HANG else 30.0
    try:
        res = launch(run_schedule, sched.world_size, args=(sched, linger), timeout=timeout,
                     quiet=True)
    except HangError as exc:
        return RunOutcome(Outcome.HANG, _hang_lines(exc), sched)
    except WorkerError as exc:
        kind = Outcome.ABORT if any("SIGABRT" in c for c in exc.causes.values()) else Outcome.ERROR
        return RunOutcome(kind, exc.brief(), sched)
    pairs, problems, received, inexact = _classify_data(sched, list(res))
    return RunOutcome(Outcome.SILENT if problems else Outcome.OK, "; ".join(problems), sched, pairs,
                      problems, received, res.trace, inexact)


def ring_shift_schedule(world_size, numel=4):
    """Every rank sends to the next and receives from the previous in one batch."""
    return {r: [batch([isend((r + 1) % world_size, numel),
                       irecv((r - 1) % world_size, numel)]), wait()]
            for r in range(world_size)}


def demo(rank, world_size):
    """Run a batched ring shift that the checker predicts is safe; return what arrived."""
    sched = Schedule(ring_shift_schedule(world_size))
    assert check(sched).outcome == Outcome.OK
    got = run_schedule(rank, world_size, sched, linger=False).received
    return [t.tolist() for _, t in sorted(got.items())]
