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
"""
from __future__ import annotations

import textwrap
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from labs.harness.tracing import span

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8")
OUTCOMES = ("ok", "silent", "hang", "error", "abort")
HANG_TIMEOUT = 2.0      # execute(): launch timeout for a schedule predicted to hang


def _itemsize(dtype: str) -> int:
    return torch.empty(0, dtype=getattr(torch, dtype)).element_size()


# ----------------------------------------------------------------------------------------
# The schedule language
# ----------------------------------------------------------------------------------------

@dataclass(eq=False)
class Op:
    """One point-to-point call. A non-blocking one (isend/irecv) is also its own handle."""

    kind: str                  # "send" | "recv" | "isend" | "irecv"
    peer: int | None           # None: receive from any source
    numel: int
    dtype: str = "float32"
    tag: int = 0

    def __post_init__(self):
        if isinstance(self.dtype, torch.dtype):
            self.dtype = str(self.dtype).replace("torch.", "")
        if self.dtype not in DTYPES:
            raise ValueError(f"{self.kind}: dtype must be one of {', '.join(DTYPES)}, "
                             f"got {self.dtype!r}")
        if self.peer is None and self.is_send:
            raise ValueError(f"{self.kind} needs a destination rank (only receives may use "
                             f"None = any source)")
        if self.peer is not None and (isinstance(self.peer, bool) or not isinstance(self.peer, int)):
            raise TypeError(f"{self.kind}: peer must be a rank (int), got {self.peer!r}")
        if isinstance(self.numel, bool) or not isinstance(self.numel, int) or self.numel < 1:
            raise ValueError(f"{self.kind}: numel must be a positive int, got {self.numel!r}")
        if isinstance(self.tag, bool) or not isinstance(self.tag, int) or self.tag < 0:
            raise ValueError(f"{self.kind}: tag must be an int >= 0, got {self.tag!r}")

    @property
    def is_send(self) -> bool:
        return self.kind in ("send", "isend")

    @property
    def blocking(self) -> bool:
        return self.kind in ("send", "recv")

    @property
    def nbytes(self) -> int:
        return self.numel * _itemsize(self.dtype)

    @property
    def arrow(self) -> str:
        """'send->1', 'irecv<-0', 'recv<-any': the short name used in verdicts."""
        tag = f" (tag {self.tag})" if self.tag else ""
        if self.is_send:
            return f"{self.kind}->{self.peer}{tag}"
        return f"{self.kind}<-{'any' if self.peer is None else self.peer}{tag}"

    def __repr__(self):
        extra = (f", dtype={self.dtype!r}" if self.dtype != "float32" else "") + \
                (f", tag={self.tag}" if self.tag else "")
        return f"{self.kind}({self.peer}, {self.numel}{extra})"


@dataclass(eq=False)
class Batch:
    """One `batch_isend_irecv` call; `wait(the_batch)` waits for every op in it."""

    ops: list

    def __repr__(self):
        return f"batch([{', '.join(map(repr, self.ops))}])"


@dataclass(eq=False)
class Wait:
    """`wait(handle)`: block until that isend/irecv (or every op of that batch) is done.
    `wait()`: block until everything this rank posted and has not waited for is done."""

    target: object = None

    def __repr__(self):
        return "wait()" if self.target is None else f"wait({self.target!r})"


@dataclass(eq=False)
class Collective:
    name: str = "barrier"

    def __repr__(self):
        return "barrier()" if self.name == "barrier" else f"collective({self.name!r})"


@dataclass(eq=False)
class Compute:
    """Local work: no communication. Executed as a traced span that sleeps `seconds`."""

    label: str = "compute"
    seconds: float = 0.01

    def __repr__(self):
        return f"compute({self.label!r})"


def send(peer, numel, dtype="float32", tag=0) -> Op:
    """Blocking send of `numel` elements of `dtype` to rank `peer` (dist.send)."""
    return Op("send", peer, numel, dtype, tag)


def recv(peer, numel, dtype="float32", tag=0) -> Op:
    """Blocking receive into a buffer of `numel` x `dtype` (dist.recv); peer None: any source."""
    return Op("recv", peer, numel, dtype, tag)


def isend(peer, numel, dtype="float32", tag=0) -> Op:
    """Non-blocking send (dist.isend); the returned op is the handle to `wait` on."""
    return Op("isend", peer, numel, dtype, tag)


def irecv(peer, numel, dtype="float32", tag=0) -> Op:
    """Non-blocking receive (dist.irecv); the returned op is the handle to `wait` on."""
    return Op("irecv", peer, numel, dtype, tag)


def batch(ops) -> Batch:
    """One batch_isend_irecv call over isend/irecv ops (on gloo: posted one by one)."""
    ops = list(ops)
    if not ops:
        raise ValueError("batch([]) is empty (batch_isend_irecv raises IndexError)")
    for op in ops:
        if not isinstance(op, Op) or op.blocking:
            raise ValueError(f"a batch holds isend/irecv ops (P2POp only accepts dist.isend "
                             f"or dist.irecv), got {op!r}")
        if op.peer is None:
            raise ValueError("a P2POp needs a peer: any-source receive is only available "
                             "as recv(None, ...) or irecv(None, ...)")
    return Batch(ops)


def wait(handle=None) -> Wait:
    """Wait for an isend/irecv handle or a whole batch; wait() waits for everything posted."""
    if handle is not None and not isinstance(handle, (Op, Batch)):
        raise TypeError(f"wait() takes an isend/irecv handle or a batch, got {handle!r}")
    if isinstance(handle, Op) and handle.blocking:
        raise ValueError(f"{handle!r} is blocking: it has no handle to wait on")
    return Wait(handle)


def barrier() -> Collective:
    """dist.barrier(): returns once every rank has entered it (it completes no p2p op)."""
    return Collective("barrier")


def collective(name) -> Collective:
    """Any other collective (all_reduce, all_gather, ...): every rank must enter it.
    Executed as a 1-element all_reduce."""
    return Collective(name)


def compute(label="compute", seconds=0.01) -> Compute:
    """Local work between calls: no communication (executed as a traced sleep)."""
    return Compute(label, seconds)


# ----------------------------------------------------------------------------------------
# A schedule, compiled: every point-to-point op numbered, every call as post/wait lists
# ----------------------------------------------------------------------------------------

@dataclass(eq=False)
class P2P:
    """One point-to-point op of a compiled schedule (an entry of `Schedule.ops`)."""

    id: int
    rank: int
    index: int                 # position of its call in the rank's list
    op: Op
    batch: int | None = None   # the rank's batch number, if it was posted in a batch
    waited: bool = False       # some call waits for it (a blocking call waits for itself)

    @property
    def send(self) -> bool:
        return self.op.is_send

    @property
    def peer(self):
        return self.op.peer

    @property
    def tag(self) -> int:
        return self.op.tag

    @property
    def nbytes(self) -> int:
        return self.op.nbytes

    def where(self) -> str:
        """'rank 0 send(1, 10) [#0]': #0 is the call's position in the rank's list (b0 is
        the rank's first batch)."""
        inside = f", b{self.batch}" if self.batch is not None else ""
        return f"rank {self.rank} {self.op!r} [#{self.index}{inside}]"

    def __repr__(self):
        return f"<op {self.id}: {self.where()}>"


@dataclass(eq=False)
class Instr:
    """One call of a rank's program: the ops it posts, then the ops it waits for."""

    rank: int
    index: int
    item: object
    post: list = field(default_factory=list)
    wait: list = field(default_factory=list)
    collective: str | None = None
    compute: Compute | None = None
    text: str = ""
    rewait: list = field(default_factory=list)   # ops an earlier call already waited for


class Schedule:
    """`Schedule({rank: [calls...]})`: the checked, numbered form of a schedule.

    `.world_size`, `.programs` (as written), `.ops` (every point-to-point op, a `P2P`),
    `.instrs` (rank -> list of `Instr`). `str(schedule)` shows it one rank per line."""

    def __init__(self, programs, world_size: int | None = None):
        if isinstance(programs, Schedule):
            programs, world_size = programs.programs, world_size or programs.world_size
        if not isinstance(programs, dict) or not programs:
            raise TypeError("a schedule is a dict {rank: [calls...]}, e.g. "
                            "{0: [send(1, 10)], 1: [recv(0, 10)]}")
        for r, prog in programs.items():
            if isinstance(r, bool) or not isinstance(r, int) or r < 0:
                raise TypeError(f"schedule keys are ranks (ints >= 0), got {r!r}")
            if not isinstance(prog, (list, tuple)):
                raise TypeError(f"rank {r}: expected a list of calls, got {prog!r}")
        self.world_size = world_size or max(programs) + 1
        if self.world_size < 2:
            raise ValueError("a schedule needs at least 2 ranks: list every rank, e.g. "
                             "{0: [send(1, 10)], 1: [recv(0, 10)]}, or pass world_size")
        self.programs = {r: list(programs.get(r, [])) for r in range(self.world_size)}
        self.ops: list[P2P] = []
        self.instrs: dict[int, list[Instr]] = {}
        self.unwaited: dict[int, list[int]] = {}
        for r in range(self.world_size):
            self._compile(r)

    def _new(self, rank, index, op, batch=None) -> int:
        self.ops.append(P2P(len(self.ops), rank, index, op, batch))
        return len(self.ops) - 1

    def _compile(self, r):
        handles, names = {}, {}     # id(handle) -> op ids / display name ('h0', 'b0', 'b0[1]')
        outstanding, instrs, nbatch, nhandle, waited = [], [], 0, 0, set()
        for index, item in enumerate(self.programs[r]):
            ins = Instr(r, index, item, text=repr(item))
            if isinstance(item, Op):
                if id(item) in handles:
                    raise ValueError(f"rank {r} lists the same {item!r} object twice; call "
                                     f"{item.kind}(...) again for a second op")
                pid = self._new(r, index, item)
                ins.post = [pid]
                if item.blocking:
                    ins.wait = [pid]
                else:
                    handles[id(item)], names[id(item)] = [pid], f"h{nhandle}"
                    nhandle += 1
                    outstanding.append(pid)
            elif isinstance(item, Batch):
                ids = [self._new(r, index, op, nbatch) for op in item.ops]
                for i, (op, pid) in enumerate(zip(item.ops, ids)):
                    handles[id(op)], names[id(op)] = [pid], f"b{nbatch}[{i}]"
                handles[id(item)], names[id(item)] = ids, f"b{nbatch}"
                ins.post = ids
                outstanding += ids
                nbatch += 1
            elif isinstance(item, Wait):
                if item.target is None:
                    ins.wait = list(outstanding)
                elif id(item.target) in handles:
                    ins.wait = handles[id(item.target)]
                    ins.text = f"wait({names[id(item.target)]})"
                else:
                    raise ValueError(f"rank {r}, call #{index}: {item!r} waits on a handle "
                                     f"this rank has not posted before it")
                outstanding = [p for p in outstanding if p not in ins.wait]
                # gloo: each wait() consumes the op's completion; a second one blocks.
                ins.rewait = [p for p in ins.wait if p in waited]
                waited.update(ins.wait)
            elif isinstance(item, Collective):
                ins.collective = item.name
            elif isinstance(item, Compute):
                ins.compute = item
            else:
                raise TypeError(f"rank {r}, call #{index}: {item!r} is not a call; use send, "
                                f"recv, isend, irecv, batch, wait, barrier or compute")
            for pid in ins.wait:
                self.ops[pid].waited = True
            instrs.append(ins)
        # Show a handle's name only where a wait refers to it: 'h0 = isend(1, 10); wait(h0)'.
        used = {ins.text[5:-1].split("[")[0] for ins in instrs
                if isinstance(ins.item, Wait) and ins.item.target is not None}
        for ins in instrs:
            if isinstance(ins.item, (Op, Batch)) and id(ins.item) in names \
                    and names[id(ins.item)] in used:
                ins.text = f"{names[id(ins.item)]} = {ins.text}"
        self.instrs[r] = instrs
        self.unwaited[r] = outstanding

    def lines(self) -> list[str]:
        """One rank per line ('  rank 0: send(1, 10); recv(1, 10)'), wrapped between calls."""
        out = []
        for r in range(self.world_size):
            head = f"  rank {r}: "
            line, calls = head, [i.text for i in self.instrs[r]] or ["(nothing)"]
            for k, call in enumerate(calls):
                piece = call + (";" if k < len(calls) - 1 else "")
                if len(line) + len(piece) > 96 and line != head:
                    out.append(line.rstrip())
                    line = " " * len(head)
                line += piece + " "
            out.append(line.rstrip())
        return out

    def __str__(self):
        return "\n".join(self.lines())

    def __repr__(self):
        return f"<Schedule on {self.world_size} ranks>\n{self}"

    def normal_form(self) -> dict:
        """rank -> calls as plain tuples, consecutive waits merged: two schedules with the
        same normal form make the same calls (`==` compares these)."""
        out = {}
        for r, instrs in self.instrs.items():
            first = min((pid for i in instrs for pid in i.post), default=0)
            calls = []
            for ins in instrs:
                if ins.post:
                    calls.append(("batch" if isinstance(ins.item, Batch) else "call", tuple(
                        (o.op.kind, o.peer, o.op.numel, o.op.dtype, o.tag)
                        for o in map(self.ops.__getitem__, ins.post))))
                    continue
                if ins.collective or ins.compute:
                    calls.append(("collective", ins.collective) if ins.collective else
                                 ("compute", ins.compute.label))
                    continue
                waited = frozenset(pid - first for pid in ins.wait)
                if not waited:
                    continue            # wait() with nothing in flight does nothing
                if calls and calls[-1][0] == "wait" and not calls[-1][1] & waited:
                    waited |= calls.pop()[1]
                calls.append(("wait", waited))
            out[r] = calls
        return out

    def __eq__(self, other):
        try:
            other = as_schedule(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self.world_size == other.world_size and self.normal_form() == other.normal_form()

    __hash__ = None


def as_schedule(schedule) -> Schedule:
    return schedule if isinstance(schedule, Schedule) else Schedule(schedule)


# ----------------------------------------------------------------------------------------
# The simulation: every rank runs its program; a pair of ops completes when both are posted
# ----------------------------------------------------------------------------------------

@dataclass
class Step:
    n: int
    rank: int | None
    text: str


class _Sim:
    """Step-by-step execution of a schedule under one backend's matching rules."""

    def __init__(self, sched: Schedule, backend: str):
        self.s, self.backend = sched, backend
        self.ranks = range(sched.world_size)
        self.pc = {r: 0 for r in self.ranks}
        self.state = {r: "running" for r in self.ranks}     # running | done | failed
        self.failure = {}            # rank -> (kind, op id, message)
        self.started, self.finished = {}, {}    # (rank, index) -> step
        self.posted, self.completed = {}, {}    # op id -> step
        self.partner = {}            # op id -> op id, both directions
        self.pending_sends, self.pending_recvs = [], []     # posted, unmatched, post order
        self.arrivals = defaultdict(dict)        # collective k -> {rank: name}
        self.coll_of = {}            # (rank, index) -> k
        self.ncoll = {r: 0 for r in self.ranks}
        self.steps: list[Step] = []

    def log(self, rank, text):
        self.steps.append(Step(len(self.steps), rank, text))

    @property
    def now(self):
        return len(self.steps)

    def run(self):
        progress = True
        while progress:
            progress = False
            for r in self.ranks:
                if self.state[r] == "running" and self._advance(r):
                    progress = True
        return self

    # -- one rank takes one step ------------------------------------------------------
    def _advance(self, r) -> bool:
        prog = self.s.instrs[r]
        if self.pc[r] >= len(prog):
            self.state[r] = "done"
            self.log(r, f"rank {r} has finished its program")
            return True
        ins = prog[self.pc[r]]
        key = (r, ins.index)
        if key not in self.started:
            self.started[key] = self.now
            notes = []
            for pid in ins.post:
                note = self._post(pid)
                if self.state[r] != "running":
                    return True
                notes.append(note)
            if ins.collective:
                k = self.ncoll[r]
                self.ncoll[r] += 1
                self.coll_of[key] = k
                self.arrivals[k][r] = ins.collective
            if self._done(ins):
                self.finished[key] = self.now
                self.pc[r] += 1
                self.log(r, self._describe_call(r, ins, notes, returned=True))
            else:
                self.log(r, self._describe_call(r, ins, notes, returned=False))
            return True
        if self._done(ins):
            self.finished[key] = self.now
            self.pc[r] += 1
            self.log(r, f"rank {r} returns from {ins.text}")
            return True
        return False

    def _describe_call(self, r, ins, notes, returned):
        if ins.compute:
            return f"rank {r} computes '{ins.compute.label}' (no communication)"
        if ins.collective:
            return f"rank {r} enters {ins.text}" + (
                ": every rank is there, it returns" if returned else
                ": it waits until every rank enters it")
        head = f"rank {r} {'posts' if ins.post and not ins.wait else 'calls'} {ins.text}"
        done = [n for n in notes if n]
        tail = ("; " + "; ".join(done)) if done else ""
        if ins.rewait and self.backend == "gloo":
            tail += ("; an earlier wait already consumed that completion, so it blocks "
                     "until the timeout")
        elif ins.wait and not returned:
            tail += "; it blocks until " + self._missing(ins)
        elif ins.wait:
            tail += "; it returns at once" if ins.post else ": already complete, it returns"
        return head + tail

    def _missing(self, ins):
        by_peer = defaultdict(list)
        for pid in ins.wait:
            if pid not in self.completed:
                p = self.s.ops[pid]
                by_peer[p.peer].append(p)
        parts = []
        for peer, ps in by_peer.items():
            who = "a sender" if peer is None else f"rank {peer}"
            other = "receive" if ps[0].send else "send"
            which = (ps[0].op.arrow if len(ps) == 1 else
                     ", ".join(f"{p.op.arrow} [#{p.index}]" for p in ps))
            parts.append(f"{who} posts the {other}{'s' if len(ps) > 1 else ''} matching {which}")
        return " and ".join(parts)

    def _done(self, ins) -> bool:
        if ins.collective:
            k = self.coll_of.get((ins.rank, ins.index))
            return k is not None and len(self.arrivals[k]) == self.s.world_size
        if ins.rewait and self.backend == "gloo":
            return False
        return all(pid in self.completed for pid in ins.wait)

    # -- posting and matching -----------------------------------------------------------
    def _fail(self, r, kind, pid, message):
        self.state[r] = "failed"
        self.failure[r] = (kind, pid, message)
        self.pending_sends = [q for q in self.pending_sends if self.s.ops[q].rank != r]
        self.pending_recvs = [q for q in self.pending_recvs if self.s.ops[q].rank != r]
        self.log(r, message)

    def _tag_ok(self, a, b) -> bool:
        return self.backend == "nccl" or a.tag == b.tag      # NCCL ignores tags

    def _post(self, pid) -> str:
        p, ops = self.s.ops[pid], self.s.ops
        r = p.rank
        self.posted[pid] = self.now
        if p.peer is not None and not 0 <= p.peer < self.s.world_size:
            self._fail(r, "bad_peer", pid, f"rank {r} calls {p.op!r}: rank {p.peer} does not "
                       f"exist (world size {self.s.world_size}): the call raises")
            return ""
        if p.peer == r and self.backend == "gloo":
            self._fail(r, "self", pid, f"rank {r} calls {p.op!r} with itself as the peer: "
                       f"gloo raises at the call (no pair to itself)")
            return ""
        if p.peer is None and self.backend == "nccl":
            self._fail(r, "any_source", pid, f"rank {r} calls {p.op!r}: NCCL has no "
                       f"any-source receive: the call raises")
            return ""
        if p.send:
            found = next((q for q in self.pending_recvs if ops[q].rank == p.peer
                          and ops[q].peer in (r, None) and self._tag_ok(p, ops[q])), None)
        else:
            found = next((q for q in self.pending_sends if ops[q].peer == r
                          and (p.peer is None or ops[q].rank == p.peer)
                          and self._tag_ok(p, ops[q])), None)
        if found is None:
            (self.pending_sends if p.send else self.pending_recvs).append(pid)
            return ""
        (self.pending_recvs if p.send else self.pending_sends).remove(found)
        return self._pair(*((pid, found) if p.send else (found, pid)), poster=pid)

    def _pair(self, s, q, poster) -> str:
        ops = self.s.ops
        self.partner[s], self.partner[q] = q, s
        other = ops[q] if poster == s else ops[s]
        note = f"{ops[poster].op.arrow} matches rank {other.rank}'s {other.op.arrow} [#{other.index}]"
        if self.backend == "gloo" and ops[q].nbytes < ops[s].nbytes:
            self.completed[s] = self.now
            self._fail(ops[q].rank, "abort", q,
                       f"rank {ops[q].rank}'s receive buffer {ops[q].op!r} ({ops[q].nbytes} bytes) "
                       f"is smaller than rank {ops[s].rank}'s message ({ops[s].nbytes} bytes): "
                       f"gloo aborts rank {ops[q].rank} (SIGABRT)")
            return note + " (size check fails)"
        self.completed[s] = self.completed[q] = self.now
        return note + ": the data moves, both complete"


# ----------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------

@dataclass
class Verdict:
    """One problem found. `outcome`: what it does on gloo (hang, error, abort, silent, or
    warning = fine here but fragile). `reached`: False if the run stops before it."""

    kind: str
    ranks: tuple
    message: str
    outcome: str
    reached: bool = True
    nccl: str = ""
    ops: tuple = ()

    def __str__(self):
        head = f"[{self.kind}] " + ("" if self.reached else "(not reached: the run stops "
                                                          "before it) ")
        text = textwrap.fill(head + self.message, 92, initial_indent="  - ",
                             subsequent_indent="    ", break_long_words=False)
        if self.nccl:
            text += "\n" + textwrap.fill("NCCL: " + self.nccl, 92, initial_indent="    ",
                                         subsequent_indent="      ", break_long_words=False)
        return text


class Report:
    """What `check` predicts. `print(report)` for people; for code:
    `.outcome` ("ok", "silent", "hang", "error" or "abort"; "undefined" on NCCL),
    `.verdicts` (list of `Verdict`),
    `.kinds` (set of verdict kinds), `.pairs` (list of (send P2P, recv P2P)), `.cycles`
    (tuples of ranks), `.stuck` (rank -> what it waits in), `.steps` (the simulation),
    `.nccl` (the same schedule under NCCL's rules, modelled)."""

    def __init__(self, schedule: Schedule, sim: _Sim, matching: dict, verdicts: list,
                 stuck: dict, cycles: list, outcome: str, backend: str):
        self.schedule, self.sim, self.backend = schedule, sim, backend
        self.matching, self.verdicts, self.stuck = matching, verdicts, stuck
        self.cycles, self.outcome, self.steps = cycles, outcome, sim.steps
        ops = schedule.ops
        self.pairs = [(ops[s], ops[q]) for s, q in sorted(matching.items()) if ops[s].send]
        self.nccl: Report | None = None
        self.send_cycle = False

    @property
    def kinds(self) -> set:
        return {v.kind for v in self.verdicts}

    def by_kind(self, kind) -> list:
        return [v for v in self.verdicts if v.kind == kind]

    def summary(self) -> str:
        """One line: 'hang: deadlock (ranks 0, 1)'."""
        problems = [v for v in self.verdicts if v.outcome != "warning"] or self.verdicts
        what = ", ".join(dict.fromkeys(
            f"{v.kind} (rank{'s' if len(v.ranks) > 1 else ''} {', '.join(map(str, v.ranks))})"
            for v in problems))
        small = " (small sends may pass)" if self.backend == "nccl" and self.send_cycle else ""
        return f"{self.outcome}" + (f": {what}" if what else "") + small

    def __str__(self):
        lines = [f"Schedule on {self.schedule.world_size} ranks (each rank's calls, in order):",
                 *self.schedule.lines(), "",
                 "Matching (FIFO per (source, destination, tag), as gloo matches):"
                 if self.backend == "gloo" else "Matching (FIFO per (source, destination); "
                 "NCCL ignores tags):"]
        for s, q in self.pairs:
            moved = s.id in self.sim.completed
            lines.append(f"  {s.where()} -> {q.where()}" + ("" if moved else
                                                              "   (never reached)"))
        if not self.pairs:
            lines.append("  (no send matches any receive)")
        lines.append("")
        word = {"ok": "OK: every call completes and every receive gets its message",
                "silent": "COMPLETES, but with silently wrong data",
                "hang": "HANG", "error": "ERROR: a call raises",
                "abort": "ABORT: a process is killed",
                "undefined": "UNDEFINED (NCCL checks no sizes)"}[self.outcome]
        lines.append(f"Prediction on {self.backend}: {word}")
        for r, text in sorted(self.stuck.items()):
            lines.append(f"  rank {r} waits forever in {text}")
        lines += [str(v) for v in self.verdicts]
        if self.nccl is not None:
            lines += ["", "On NCCL (modelled, not run: tags ignored, send/recv to self allowed, "
                          "no any-source receive):", f"  {self.nccl.summary()}"]
            said = any("may buffer" in v.nccl for v in self.verdicts)
            if self.nccl.send_cycle and not said:
                lines.append("  (NCCL may buffer a small send, so a cycle of sends can "
                             "complete there for small messages and hang for large ones.)")
            lines += [str(v) for v in self.nccl.verdicts if v.kind == "nccl_first_batch"]
        return "\n".join(lines)

    def __repr__(self):
        return f"<Report {self.summary()}>"

    def steps_text(self) -> str:
        return "\n".join(f"{s.n:3d}. {s.text}" for s in self.steps)


def _final_matching(sched: Schedule, sim: _Sim) -> dict:
    """The simulation's pairs, extended FIFO per channel to the ops it never reached.
    For specific-source ops this is exactly gloo's matching: the k-th send from s to d
    with tag t meets the k-th receive on d from s with tag t, in program order."""
    ops, nccl = sched.ops, sim.backend == "nccl"
    matching = dict(sim.partner)

    def valid(p):
        if p.id in matching:
            return False
        if p.peer is not None and not 0 <= p.peer < sched.world_size:
            return False
        return not (p.peer == p.rank and not nccl) and not (p.peer is None and nccl)

    def chan(src, dst, tag):
        return (src, dst) if nccl else (src, dst, tag)

    sends, recvs, anys = defaultdict(deque), defaultdict(deque), []
    for p in filter(valid, ops):       # ops are numbered rank by rank, in program order
        if p.send:
            sends[chan(p.rank, p.peer, p.tag)].append(p.id)
        elif p.peer is None:
            anys.append(p.id)
        else:
            recvs[chan(p.peer, p.rank, p.tag)].append(p.id)
    for key, rq in recvs.items():
        sq = sends[key]
        while rq and sq:
            s, q = sq.popleft(), rq.popleft()
            matching[s], matching[q] = q, s
    for q in anys:
        p = ops[q]
        key = next((k for k in sorted(sends) if k[1] == p.rank and sends[k]
                    and (nccl or k[2] == p.tag)), None)
        if key is not None:
            s = sends[key].popleft()
            matching[s], matching[q] = q, s
    return matching


def _tarjan(graph) -> list:
    """Strongly connected components of {node: set(successors)}."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _cycle_through(graph, start) -> list:
    """Shortest cycle start -> ... -> start (breadth first), as the list of its nodes."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def _call_verdicts(sched, sim, backend):
    """Calls that raise at once: a peer that does not exist, self send/recv on gloo,
    any-source receive on NCCL."""
    out, ws = [], sched.world_size
    for p in sched.ops:
        reached = p.id in sim.posted
        if p.peer is not None and not 0 <= p.peer < ws:
            out.append(Verdict("bad_peer", (p.rank,), f"{p.where()}: rank {p.peer} does not "
                               f"exist (world size {ws}); the call raises.", "error", reached,
                               "an error there too.", (p.id,)))
        elif p.peer == p.rank and backend == "gloo":
            what = "sends to itself" if p.send else "receives from itself"
            err = ("ValueError (a blocking send to self)" if p.op.kind == "send" else
                   "RuntimeError 'Pair is not connected'")
            out.append(Verdict("self", (p.rank,), f"{p.where()} {what}: gloo has no pair to "
                               f"the rank's own process, so the call raises {err}.", "error",
                               reached, "NCCL allows send/recv to self (post both in one "
                               "batch).", (p.id,)))
        elif p.peer is None and backend == "nccl":
            out.append(Verdict("any_source", (p.rank,), f"{p.where()}: NCCL has no "
                               f"any-source receive; the call raises.", "error", reached,
                               "", (p.id,)))
    return out


def _buffer_verdicts(sched, sim, matching):
    """Matched pairs whose buffers disagree: gloo compares byte counts, nothing else."""
    out, ops = [], sched.ops
    for s_id, q_id in sorted(matching.items()):
        s, q = ops[s_id], ops[q_id]
        if not s.send or (s.nbytes == q.nbytes and s.op.dtype == q.op.dtype):
            continue
        reached = s_id in sim.completed
        pair = f"{s.where()} -> {q.where()}"
        if q.nbytes < s.nbytes:
            out.append(Verdict(
                "size_mismatch", (s.rank, q.rank),
                f"{pair}: the receive buffer ({q.nbytes} bytes) is smaller than the message "
                f"({s.nbytes} bytes). gloo aborts the receiving process (SIGABRT: 'Received "
                f"data size doesn't match expected size'); nothing can catch it.",
                "abort" if sim.backend == "gloo" else "undefined", reached, "NCCL does not check sizes: undefined (corrupt data or a "
                "hang).", (s_id, q_id)))
        elif q.nbytes > s.nbytes:
            retyped = (f", and those bytes are read as {q.op.dtype} although they were "
                       f"{s.op.dtype}" if q.op.dtype != s.op.dtype else "")
            count = "" if retyped else f" = {s.nbytes // _itemsize(q.op.dtype)} elements"
            out.append(Verdict(
                "size_mismatch", (s.rank, q.rank),
                f"{pair}: the receive buffer ({q.nbytes} bytes) is larger than the message "
                f"({s.nbytes} bytes). gloo fills a prefix (the first {s.nbytes} bytes{count}) "
                f"and leaves the rest untouched{retyped}: silently wrong, no error.",
                "silent" if sim.backend == "gloo" else "undefined", reached, "NCCL does not check sizes either: undefined.",
                (s_id, q_id)))
        else:
            out.append(Verdict(
                "dtype_mismatch", (s.rank, q.rank),
                f"{pair}: the same byte count ({s.nbytes}), different dtypes: the "
                f"{s.op.dtype} bytes are silently reinterpreted as {q.op.dtype} (gloo "
                f"matches bytes, not types).", "silent", reached,
                "torch does not compare dtypes on NCCL either.", (s_id, q_id)))
    return out


def _lonely_verdicts(sched, sim, matching, backend, excluded):
    """Ops that match nothing. A send and a receive between the same two ranks that differ
    only in tag are one verdict: a tag mismatch."""
    out, ops = [], sched.ops
    lone = [p for p in ops if p.id not in matching and p.id not in excluded]
    for q in [p for p in lone if not p.send and p.peer is not None and backend == "gloo"]:
        s = next((p for p in lone if p.send and p.rank == q.peer and p.peer == q.rank
                  and p.tag != q.tag), None)
        if s is None:
            continue
        lone.remove(s)
        lone.remove(q)
        waited = s.waited or q.waited
        out.append(Verdict(
            "tag_mismatch", (s.rank, q.rank),
            f"{s.where()} has tag {s.tag} but {q.where()} expects tag {q.tag}: gloo honours "
            f"tags, so they never match" + (", and the call that waits for them waits until "
                                            "the timeout." if waited else "; nothing waits "
                                            "for them, so the message is silently lost."),
            "hang" if waited else "silent", s.id in sim.posted or q.id in sim.posted,
            "NCCL ignores tags: these two match there.", (s.id, q.id)))
    for p in lone:
        tag = f" with tag {p.tag}" if backend == "gloo" else ""
        if p.send:
            why = f"no receive on rank {p.peer} from rank {p.rank}{tag} is left to match it"
        else:
            src = "any rank" if p.peer is None else f"rank {p.peer}"
            why = f"no send from {src} to rank {p.rank}{tag} is left to match it"
        if p.waited:
            rule = " (a send completes only once its receive is posted)" if p.send else ""
            tail, outcome = f": it waits forever{rule}.", "hang"
        else:
            tail = (": nothing waits for it, so the program goes on and the message is lost."
                    if p.send else ": nothing waits for it, so the program goes on with a "
                    "buffer that was never written.")
            outcome = "silent"
        out.append(Verdict(
            "unmatched_send" if p.send else "unmatched_recv", (p.rank,),
            f"{p.where()}: {why}{tail}", outcome, p.id in sim.posted,
            "the same on NCCL, where the first call between two ranks also sets up their "
            "communicator, which needs both: even an op nobody waits for can hang there "
            "(pytorch#108378).", (p.id,)))
    return out


def _stuck_analysis(sched, sim, matching, backend, nccl):
    """Why each rank that cannot move is stuck; cycles of ranks waiting for each other."""
    ops, ws = sched.ops, sched.world_size
    graph, edge_op, what, verdicts, stuck = {}, {}, {}, [], {}
    for r in range(ws):
        if sim.state[r] != "running":
            continue
        ins = sched.instrs[r][sim.pc[r]]
        graph[r], edge_op[r] = set(), {}
        if ins.collective:
            k = sim.coll_of[(r, ins.index)]
            missing = [o for o in range(ws) if o not in sim.arrivals[k]]
            graph[r] = {o for o in missing if sim.state[o] == "running"}
            edge_op[r] = {o: None for o in graph[r]}
            gone = [o for o in missing if sim.state[o] == "done"]
            if gone:
                verdicts.append(Verdict(
                    "unmatched_collective", (r, *gone),
                    f"rank {r} waits in {ins.text} (its collective call #{k}), but rank"
                    f"{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} finished "
                    f"without calling it.", "hang", True, "the same on NCCL.", ()))
            what[r] = {o: ins.text for o in range(ws)}
        elif ins.rewait and backend == "gloo":
            what[r] = {}
            again = ", ".join(ops[p].where() for p in ins.rewait)
            verdicts.append(Verdict(
                "double_wait", (r,), f"rank {r}'s call {ins.text} [#{ins.index}] waits again "
                f"for {again}: on gloo each wait() consumes the op's completion, so a second "
                f"wait blocks until the timeout.", "hang", True, "NCCL's Work checks CUDA events "
                "that stay recorded: waiting again does not block there.", tuple(ins.rewait)))
        else:
            what[r] = {}
            for pid in ins.wait:
                other = matching.get(pid)
                if pid in sim.completed or other is None:
                    continue
                o = ops[other].rank
                if sim.state[o] == "running":
                    graph[r].add(o)
                    edge_op[r].setdefault(o, pid)
                    arrow = ops[pid].op.arrow
                    what[r].setdefault(o, arrow if ins.post else f"wait({arrow})")
        stuck[r] = ins.text
    cycles, send_cycle = [], False
    for comp in _tarjan(graph):
        if len(comp) == 1 and comp[0] not in graph[comp[0]]:
            continue
        sub = {v: graph[v] & set(comp) for v in comp}
        cycle = _cycle_through(sub, comp[0])
        nexts = cycle[1:] + cycle[:1]
        words = " while ".join(f"rank {v} waits in {what[v][n]}" for v, n in zip(cycle, nexts))
        pids = [edge_op[v][n] for v, n in zip(cycle, nexts)]
        sends_only = all(p is not None and ops[p].send for p in pids)
        recvs_only = all(p is not None and not ops[p].send for p in pids)
        send_cycle |= sends_only
        why = ("A send completes only once its receive is posted, and every receive comes "
               "after a send that waits: nobody reaches a receive." if sends_only else
               "Every receive waits for a send that comes after another receive." if recvs_only
               else "Each rank waits for a call that the next rank in the cycle has not "
               "reached.")
        note = ""
        if nccl is not None:
            same = any(v.kind == "deadlock" and set(v.ranks) == set(cycle)
                       for v in nccl.verdicts)
            note = ("the same cycle on NCCL" if same else
                    f"no such cycle on NCCL (modelled: {nccl.summary()})")
            if same and sends_only:
                note += ("; but NCCL may buffer a small send, so there it can complete for "
                         "small messages and hang for large ones: never rely on it.")
            else:
                note += "."
        verdicts.insert(0, Verdict("deadlock", tuple(cycle), f"{words}. {why}", "hang", True,
                                   note, tuple(p for p in pids if p is not None)))
        cycles.append(tuple(cycle))
    in_cycle = {r for c in cycles for r in c}
    for r in stuck:
        notes = []
        if r not in in_cycle and graph[r]:
            notes.append(f"behind rank{'s' if len(graph[r]) > 1 else ''} "
                         f"{', '.join(map(str, sorted(graph[r])))}, which cannot move")
        dead = sorted({ops[matching[pid]].rank for pid in sched.instrs[r][sim.pc[r]].wait
                       if pid in matching and sim.state[ops[matching[pid]].rank] == "failed"})
        if dead:
            notes.append(f"rank {', '.join(map(str, dead))} failed first; in a real run this "
                         f"rank then fails with 'Connection closed by peer'")
        if notes:
            stuck[r] += " (" + "; ".join(notes) + ")"
    return stuck, verdicts, cycles, send_cycle


def _warning_verdicts(sched, sim, matching, backend):
    """Fine in this schedule, fragile anyway."""
    out, ops = [], sched.ops
    for r in range(sched.world_size):
        for pid in sched.unwaited[r]:
            if pid in matching:
                p = ops[pid]
                out.append(Verdict(
                    "unwaited", (r,), f"{p.where()} is never waited for: the program may read "
                    f"or reuse its buffer before the transfer is done (a barrier does not "
                    f"complete it; only wait() does).", "warning", pid in sim.posted,
                    "the same on NCCL, where wait() only orders the CUDA stream.", (pid,)))
    seen = set()
    for q in ops:
        if q.send or q.peer is not None or (q.rank, q.tag) in seen:
            continue
        senders = sorted({p.rank for p in ops if p.send and p.peer == q.rank and
                          (p.tag == q.tag or backend == "nccl")})
        if len(senders) > 1:
            seen.add((q.rank, q.tag))
            out.append(Verdict(
                "any_source_race", (q.rank, *senders),
                f"rank {q.rank} receives from any source (tag {q.tag}) and ranks "
                f"{', '.join(map(str, senders))} all send to it: which message lands in which "
                f"buffer depends on timing.", "warning", q.id in sim.posted,
                "NCCL has no any-source receive: src=None raises there.", (q.id,)))
    return out


_ORDER = ["deadlock", "double_wait", "self", "bad_peer", "any_source", "size_mismatch",
          "tag_mismatch",
          "unmatched_send", "unmatched_recv", "unmatched_collective", "dtype_mismatch",
          "unwaited", "any_source_race", "nccl_first_batch"]


def check(schedule, backend: str = "gloo") -> Report:
    """Predict what `schedule` does, without starting a worker. See the module docstring.

    backend="nccl" applies NCCL's rules instead (modelled, not run: tags ignored, send/recv
    to self allowed, no any-source receive, sizes not checked). A gloo report carries the
    NCCL one as `report.nccl` and says, verdict by verdict, what would differ."""
    if backend not in ("gloo", "nccl"):
        raise ValueError("backend must be 'gloo' or 'nccl'")
    sched = as_schedule(schedule)
    nccl = check(sched, backend="nccl") if backend == "gloo" else None
    sim = _Sim(sched, backend).run()
    matching = _final_matching(sched, sim)
    verdicts = _call_verdicts(sched, sim, backend)
    excluded = {v.ops[0] for v in verdicts}
    verdicts += _buffer_verdicts(sched, sim, matching)
    verdicts += _lonely_verdicts(sched, sim, matching, backend, excluded)
    stuck, stuck_verdicts, cycles, send_cycle = _stuck_analysis(sched, sim, matching, backend,
                                                                nccl)
    verdicts += stuck_verdicts
    verdicts += _warning_verdicts(sched, sim, matching, backend)
    if backend == "nccl":
        firsts = [type(sched.instrs[r][0].item) if sched.instrs[r] else None
                  for r in range(sched.world_size)]
        if Batch in firsts and any(f is not Batch for f in firsts):
            verdicts.append(Verdict(
                "nccl_first_batch", tuple(r for r, f in enumerate(firsts) if f is Batch),
                "a batch is the first call on the group, but not every rank takes part in "
                "it: undefined on NCCL (torch's batch_isend_irecv docstring).", "warning"))
    failures = [kind for kind, _, _ in sim.failure.values()]
    reached = {v.outcome for v in verdicts if v.reached}
    outcome = ("abort" if "abort" in failures else "error" if failures else
               "hang" if stuck else "undefined" if "undefined" in reached else
               "silent" if "silent" in reached else "ok")
    verdicts.sort(key=lambda v: (not v.reached, _ORDER.index(v.kind)))
    report = Report(sched, sim, matching, verdicts, stuck, cycles, outcome, backend)
    report.nccl, report.send_cycle = nccl, send_cycle
    return report


# ----------------------------------------------------------------------------------------
# From a real run's trace (labs.harness.tracing.Event list) back to a schedule
# ----------------------------------------------------------------------------------------

def from_trace(events) -> dict:
    """`{rank: [calls...]}` from `results.trace`: the calls each rank really made, in order.

    send/recv/isend/irecv with their real peers, sizes, dtypes and tags; batches
    (consecutive ops with the same batch number); waits (`wait()` when they cover everything
    in flight, `wait(batch)` when they cover a whole batch, else one op); barriers and other
    collectives; compute spans. `check(from_trace(results.trace))` explains a real run."""
    by_rank = defaultdict(list)
    for e in events:
        by_rank[e.rank].append(e)
    if not by_rank:
        raise ValueError("the trace is empty")
    return {r: _calls_of(evs) for r, evs in sorted(by_rank.items())}


def _calls_of(evs) -> list:
    items, inflight, waits, current = [], [], [], None   # current: (batch number, Batch)
    done = []                   # ops already waited for: a second wait on one is a rewait

    def write_waits():
        if not waits:
            return
        if not inflight and not any(w in done for w in waits):   # that is wait()
            items.append(wait())
        else:
            ids, written = {id(op) for _, op, _ in waits}, set()
            for _, op, b in waits:
                if b is not None and all(id(o) in ids for o in b.ops):
                    if id(b) not in written:
                        written.add(id(b))
                        items.append(wait(b))
                else:
                    items.append(wait(op))
        done.extend(w for w in waits if w not in done)
        waits.clear()

    for e in evs:
        if e.op == "wait":
            # TracedWork.wait labels its event with the op's description; when two ops
            # look alike, the one that completed at the wait's end is the one waited for.
            cands = [c for c in inflight if c[0].describe() == e.label]
            if cands:
                best = next((c for c in cands if c[0].t_done is not None
                             and c[0].t_done == e.t_done), cands[0])
                inflight.remove(best)
                waits.append(best)
            else:                   # waiting again on an op already waited for
                write_waits()
                again = [c for c in done if c[0].describe() == e.label]
                if again:
                    waits.append(again[0])
            current = None
            continue
        write_waits()
        if e.op in ("send", "recv", "isend", "irecv"):
            op = Op(e.op, e.peer, max(int(e.numel), 1), e.dtype or "float32", int(e.tag))
            if e.batch is not None:
                if current is None or current[0] != e.batch:
                    current = (e.batch, Batch([]))
                    items.append(current[1])
                current[1].ops.append(op)
                inflight.append((e, op, current[1]))
                continue
            items.append(op)
            if not op.blocking:
                inflight.append((e, op, None))
        elif e.op == "compute":
            items.append(Compute(e.label or "compute"))
        else:
            items.append(Collective(e.op))
        current = None
    write_waits()
    return items


# ----------------------------------------------------------------------------------------
# Running a schedule on real gloo workers
# ----------------------------------------------------------------------------------------

def payload(p: P2P) -> torch.Tensor:
    """The distinctive values op `p` sends: small integers, exact in every dtype, that
    differ from every other send of the schedule (so a receiver can tell which arrived)."""
    values = (p.id * 37 + torch.arange(p.op.numel)) % 113 + 1
    return values.to(getattr(torch, p.op.dtype))


def _linger(world_size):
    """Stay alive (outside any torch.distributed call) until every rank has finished its
    schedule, so a rank stuck in a receive sees a hang, not a peer that exited."""
    store = dist.distributed_c10d._get_default_store()
    store.add("schedule/finished", 1)
    while store.add("schedule/finished", 0) < world_size:
        time.sleep(0.005)


def run_schedule(rank, world_size, schedule, linger=True):
    """Worker: make this rank's calls of `schedule` with real dist.send/recv/isend/irecv/
    batch_isend_irecv/wait; return {"received": {op id: tensor}, "sources": {op id: rank}}."""
    sched = as_schedule(schedule)
    if sched.world_size != world_size:
        raise ValueError(f"the schedule is for {sched.world_size} ranks, got {world_size}")
    ops, works, buffers, sources, sent = sched.ops, {}, {}, {}, {}

    def tensor(p):          # kept referenced until the end: never freed while in flight
        if p.send:
            sent[p.id] = payload(p)
            return sent[p.id]
        buffers[p.id] = torch.zeros(p.op.numel, dtype=getattr(torch, p.op.dtype))
        return buffers[p.id]

    for ins in sched.instrs[rank]:
        if ins.compute:
            with span(ins.compute.label):
                time.sleep(ins.compute.seconds or 0.0)
        elif ins.collective == "barrier":
            dist.barrier()
        elif ins.collective:
            dist.all_reduce(torch.zeros(1))
        elif isinstance(ins.item, Batch):
            p2p = [dist.P2POp(dist.isend if ops[i].send else dist.irecv, tensor(ops[i]),
                              ops[i].peer, tag=ops[i].tag) for i in ins.post]
            works.update(zip(ins.post, dist.batch_isend_irecv(p2p)))
        elif ins.post:
            p = ops[ins.post[0]]
            if p.op.kind == "send":
                dist.send(tensor(p), p.peer, tag=p.tag)
            elif p.op.kind == "recv":
                src = dist.recv(tensor(p), p.peer, tag=p.tag)
                sources[p.id] = src
            elif p.op.kind == "isend":
                works[p.id] = dist.isend(tensor(p), p.peer, tag=p.tag)
            else:
                works[p.id] = dist.irecv(tensor(p), p.peer, tag=p.tag)
        for pid in ins.wait if not ins.post else ():
            works[pid].wait()
    if linger:
        _linger(world_size)
    for pid, w in works.items():
        if not ops[pid].send and ops[pid].peer is None and w.is_completed():
            sources[pid] = w.source_rank()
    return {"received": buffers, "sources": sources}


@dataclass
class RunOutcome:
    """What really happened. `kind`: ok | silent | hang | error | abort; `detail`: stable
    text; `pairs`: recv op id -> send op id, identified from the data that arrived;
    `problems`: what was silently wrong; `trace`: the run's events (None if it failed)."""

    kind: str
    detail: str
    schedule: Schedule
    pairs: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    received: dict = field(default_factory=dict)
    trace: list | None = None
    inexact: set = field(default_factory=set)     # recv ids whose buffer is not exact

    def __str__(self):
        word = {"ok": "OK", "silent": "COMPLETED, with silently wrong data", "hang": "HANG",
                "error": "ERROR", "abort": "ABORT"}[self.kind]
        lines = [f"Real run on gloo ({self.schedule.world_size} workers): {word}"]
        if self.kind in ("ok", "silent"):
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
    ops = sched.ops
    sent = {p.id: payload(p) for p in ops if p.send}
    pairs, problems, received, inexact = {}, [], {}, set()
    for r, value in enumerate(values):
        received.update(value["received"])
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
    lines = []
    for r, st in sorted(exc.statuses.items()):
        line = (f"rank {r}: blocked in {st['blocked_in']}" if st.get("blocked_in") else
                f"rank {r}: still starting or joining the process group"
                if st.get("phase") == "connect" else
                f"rank {r}: finished its calls, waiting for the other ranks")
        if st.get("outstanding"):
            line += "; posted, not completed: " + ", ".join(st["outstanding"])
        lines.append(line)
    return "\n".join(lines) or exc.brief()


def execute(schedule, timeout: float | None = None, linger: bool = True) -> RunOutcome:
    """Run `schedule` on real gloo workers (one launch) and classify what happened.

    timeout: None picks HANG_TIMEOUT (2 s) when `check` predicts a hang, else 30 s: a hang
    costs a short wait, a healthy run on a loaded machine gets room. The prediction only
    chooses how long to wait, never what counts as a hang.
    """
    from labs.harness.launcher import HangError, WorkerError, launch
    sched = as_schedule(schedule)
    if timeout is None:
        timeout = HANG_TIMEOUT if check(sched).outcome == "hang" else 30.0
    try:
        res = launch(run_schedule, sched.world_size, args=(sched, linger), timeout=timeout,
                     quiet=True)
    except HangError as exc:
        return RunOutcome("hang", _hang_lines(exc), sched)
    except WorkerError as exc:
        kind = "abort" if any("SIGABRT" in c for c in exc.causes.values()) else "error"
        return RunOutcome(kind, exc.brief(), sched)
    pairs, problems, received, inexact = _classify_data(sched, list(res))
    return RunOutcome("silent" if problems else "ok", "; ".join(problems), sched, pairs,
                      problems, received, res.trace, inexact)


def verify(schedule, timeout: float | None = None) -> tuple:
    """check() then execute(); print both and whether the prediction matched."""
    report = check(schedule)
    real = execute(schedule, timeout=timeout)
    print(f"predicted: {report.summary()}")
    print(str(real))
    print(f"prediction matched the real run: {report.outcome == real.kind}")
    return report, real


# ----------------------------------------------------------------------------------------
# Pictures
# ----------------------------------------------------------------------------------------

_FACE = {"send": "#d62728", "recv": "#1f77b4", "wait": "#9467bd", "collective": "#2ca02c",
         "compute": "#7f7f7f"}


def _cells(sched: Schedule):
    """Per rank, the boxes to draw in program order: (x, kind, label, op id | None, instr)."""
    cells, batches = {}, []
    for r in range(sched.world_size):
        x, row = 0, []
        for ins in sched.instrs[r]:
            if ins.post:
                x0 = x
                for pid in ins.post:
                    op = sched.ops[pid].op
                    size = f"{op.numel}x{op.dtype.replace('float', 'f').replace('int', 'i')}"
                    tag = f" t{op.tag}" if op.tag else ""
                    arrow = "\u2192" if op.is_send else "\u2190"
                    peer = "any" if op.peer is None else op.peer
                    row.append((x, "send" if op.is_send else "recv",
                                f"{op.kind}{arrow}{peer}\n{size}{tag}", pid, ins))
                    x += 1
                if isinstance(ins.item, Batch):
                    batches.append((r, x0, x - 1))
            elif ins.compute:
                row.append((x, "compute", f"compute\n{ins.compute.label}", None, ins))
                x += 1
            elif ins.collective:
                row.append((x, "collective", ins.collective, None, ins))
                x += 1
            else:
                row.append((x, "wait", ins.text.replace("wait(", "wait\n(", 1), None, ins))
                x += 1
        cells[r] = row
    return cells, batches


def draw(schedule, report: Report | None = None, ax=None, upto: int | None = None,
         title: str | None = None):
    """Ranks as lanes, calls in program order, matched pairs as arrows, the deadlock cycle
    in red. `upto=k`: the state after simulation step k (see `step_through`)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyBboxPatch, Patch

    sched = as_schedule(schedule)
    report = report if report is not None else check(sched)
    sim, ops = report.sim, sched.ops
    cells, batches = _cells(sched)
    width = max(len(row) for row in cells.values()) or 1
    if ax is None:
        _, ax = plt.subplots(figsize=(min(2.0 + 1.25 * width, 16), 1.3 + 1.05 * sched.world_size))
    def by(stamps, key):        # happened (by step `upto`, or at all)?
        return key in stamps and (upto is None or stamps[key] <= upto)

    cycle_ops = {pid for v in report.verdicts if v.kind == "deadlock" for pid in v.ops}
    problem_ops = {pid for v in report.verdicts if v.kind != "deadlock" and v.outcome != "warning"
                   for pid in v.ops}
    pos = {}
    for r, row in cells.items():
        for x, kind, label, pid, ins in row:
            pos[pid if pid is not None else ("i", r, ins.index)] = (x, r)
            if pid is not None:
                started, done = by(sim.posted, pid), by(sim.completed, pid)
            else:
                started = by(sim.started, (r, ins.index))
                done = by(sim.finished, (r, ins.index))
            face, alpha, edge, lw, ls = _FACE[kind], 0.9, "black", 0.6, "-"
            if not started:
                face, alpha, edge, ls = "white", 1.0, "#999999", "--"
            elif not done:
                alpha = 0.35
            if pid in cycle_ops and upto is None:
                edge, lw = "red", 2.6
            elif pid in problem_ops and started:
                edge, lw = "darkorange", 2.4
            if upto is None and r in report.stuck and sim.pc[r] < len(sched.instrs[r]) and \
                    sched.instrs[r][sim.pc[r]] is ins and pid not in cycle_ops and \
                    (pid is None or pid not in sim.completed):
                edge, lw = ("red" if r in {x for c in report.cycles for x in c} else "darkorange",
                            2.6)
            ax.add_patch(FancyBboxPatch((x - 0.38, r - 0.3), 0.76, 0.6,
                                        boxstyle="round,pad=0.02",
                                        facecolor=to_rgba(face, alpha), edgecolor=edge,
                                        linewidth=lw, linestyle=ls))
            ax.text(x, r, label, ha="center", va="center", fontsize=7,
                    color="#777777" if not started else "black")
    for r, x0, x1 in batches:
        ax.add_patch(FancyBboxPatch((x0 - 0.46, r - 0.4), x1 - x0 + 0.92, 0.8,
                                    boxstyle="round,pad=0.02", fill=False, edgecolor="#444444",
                                    linewidth=1.0, linestyle=":"))
        ax.text(x0 - 0.44, r - 0.42, "batch", fontsize=6, va="bottom", color="#444444")
    for s, q in report.pairs:
        if upto is None and (s.id in cycle_ops or q.id in cycle_ops):
            continue            # drawn below as a red "waits for" arrow
        (xs, ys), (xq, yq) = pos[s.id], pos[q.id]
        moved = by(sim.completed, s.id)
        dy = 0.3 if yq > ys else -0.3
        ax.annotate("", xy=(xq, yq - dy), xytext=(xs, ys + dy),
                    arrowprops=dict(arrowstyle="-|>", color="black" if moved else "#aaaaaa",
                                    lw=1.1, linestyle="-" if moved else ":",
                                    connectionstyle="arc3,rad=0.08" if ys != yq else
                                    "arc3,rad=0.5"))
    if upto is None:
        for v in report.verdicts:
            if v.kind != "deadlock":
                continue
            for pid in v.ops:
                other = report.matching.get(pid)
                if other is None:
                    continue
                (x0, y0), (x1, y1) = pos[pid], pos[other]
                dy = 0.3 if y1 > y0 else -0.3
                ax.annotate("", xy=(x1, y1 - dy), xytext=(x0, y0 + dy),
                            arrowprops=dict(arrowstyle="-|>", color="red", lw=1.8,
                                            linestyle="--", connectionstyle="arc3,rad=-0.15"))
    for r, (kind, pid, _) in sim.failure.items():
        if pid is not None and (upto is None or sim.posted.get(pid, 0) <= upto):
            x, y = pos[pid]
            ax.text(x, y + 0.36, "\u2717 " + ("SIGABRT" if kind == "abort" else "raises"),
                    ha="center", va="top", fontsize=7, color="red", fontweight="bold")
    ax.set_xlim(-0.7, width - 0.3)
    ax.set_ylim(sched.world_size - 0.4, -0.6)
    ax.set_yticks(range(sched.world_size), [f"rank {r}" for r in range(sched.world_size)])
    ax.set_xticks([])
    ax.set_xlabel("each rank's calls, in program order")
    for spine in ("top", "right", "bottom"):
        ax.spines[spine].set_visible(False)
    if title is None:
        title = f"predicted on {report.backend}: {report.summary()}"
        if upto is not None:
            title = f"step {upto}: {report.steps[upto].text}" if upto < len(report.steps) \
                else title
    ax.set_title(textwrap.fill(title, 110), loc="left", fontsize=9)
    handles = [Patch(facecolor=_FACE["send"], label="send"),
               Patch(facecolor=_FACE["recv"], label="recv"),
               Patch(facecolor=_FACE["wait"], label="wait"),
               Patch(facecolor="white", edgecolor="#999999", linestyle="--", label="not reached"),
               Patch(facecolor=_FACE["send"], alpha=0.35, label="posted, not complete"),
               Line2D([], [], color="black", marker=">", label="matched pair"),
               Line2D([], [], color="red", linestyle="--", marker=">", label="waits for (deadlock)"),
               Patch(facecolor="white", edgecolor="red", linewidth=2, label="blocked forever"),
               Patch(facecolor="white", edgecolor="darkorange", linewidth=2, label="problem")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3,
              fontsize=7, frameon=False)
    return ax


def step_through(schedule, report: Report | None = None):
    """A slider over the simulation's steps: the picture and the text of step k.
    Returns the widget (display it); `report.steps_text()` is the same as plain text."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    sched = as_schedule(schedule)
    report = report if report is not None else check(sched)
    out = widgets.Output()
    slider = widgets.IntSlider(value=len(report.steps) - 1, min=0,
                               max=max(len(report.steps) - 1, 0), description="step",
                               continuous_update=False)

    def show(change=None):
        k = slider.value
        with out:
            out.clear_output(wait=True)
            draw(sched, report, upto=k)
            plt.show()
            print(f"step {k}: {report.steps[k].text}" if report.steps else "no steps")

    slider.observe(show, names="value")
    show()
    return widgets.VBox([slider, out])


# ----------------------------------------------------------------------------------------
# Command line / torchrun
# ----------------------------------------------------------------------------------------

def ring_schedule(world_size, numel=4):
    """Every rank sends to the next and receives from the previous in one batch."""
    return {r: [batch([isend((r + 1) % world_size, numel),
                       irecv((r - 1) % world_size, numel)]), wait()]
            for r in range(world_size)}


def demo(rank, world_size):
    """Run a batched ring shift that the checker predicts is safe; return what arrived."""
    sched = Schedule(ring_schedule(world_size))
    assert check(sched).outcome == "ok"
    got = run_schedule(rank, world_size, sched, linger=False)["received"]
    return [t.tolist() for _, t in sorted(got.items())]


if __name__ == "__main__":
    from labs.harness import cli
    cli.main(demo)
