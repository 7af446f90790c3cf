"""A schedule, compiled: every point-to-point op numbered, every call as post/wait lists.

`Schedule({rank: [calls...]})` checks what was written and numbers it; the simulation,
the verdicts, the drawing and the real run all read this form.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from labs.harness.ranks.calls import wrap_calls
from labs.harness.schedule.language import Batch, Collective, Compute, ScheduledOp, Wait


@dataclass(eq=False)
class P2P:
    """One point-to-point op of a compiled schedule (an entry of `Schedule.ops`)."""

    id: int
    rank: int
    index: int                 # position of its call in the rank's list
    op: ScheduledOp
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


@dataclass
class _Handles:
    """One rank's handles while it compiles: what each isend/irecv op or batch stands for."""

    ops: dict = field(default_factory=dict)      # id(handle) -> op ids
    names: dict = field(default_factory=dict)    # id(handle) -> 'h0', 'b0' or 'b0[1]'
    outstanding: list = field(default_factory=list)   # posted, not yet waited for
    waited: set = field(default_factory=set)     # op ids some earlier wait waited for
    nbatch: int = 0
    nhandle: int = 0


class Schedule:
    """`Schedule({rank: [calls...]})`: the checked, numbered form of a schedule.

    `.world_size`, `.programs` (as written), `.ops` (every point-to-point op, a `P2P`),
    `.instrs` (rank -> list of `Instr`). `str(schedule)` shows it one rank per line."""

    def __init__(self, programs, world_size: int | None = None):
        if isinstance(programs, Schedule):
            programs, world_size = programs.programs, world_size or programs.world_size
        _check_programs(programs)
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
        handles = _Handles()
        instrs = [self._instr(r, index, item, handles)
                  for index, item in enumerate(self.programs[r])]
        _name_waited_handles(instrs, handles.names)
        self.instrs[r] = instrs
        self.unwaited[r] = handles.outstanding

    def _instr(self, r, index, item, handles: _Handles) -> Instr:
        ins = Instr(r, index, item, text=repr(item))
        if isinstance(item, ScheduledOp):
            self._post_op(ins, item, handles)
        elif isinstance(item, Batch):
            self._post_batch(ins, item, handles)
        elif isinstance(item, Wait):
            _wait_for(ins, item, handles)
        elif isinstance(item, Collective):
            ins.collective = item.name
        elif isinstance(item, Compute):
            ins.compute = item
        else:
            raise TypeError(f"rank {r}, call #{index}: {item!r} is not a call; use send, "
                            f"recv, isend, irecv, batch, wait, barrier or compute")
        for pid in ins.wait:
            self.ops[pid].waited = True
        return ins

    def _post_op(self, ins: Instr, op: ScheduledOp, handles: _Handles):
        if id(op) in handles.ops:
            raise ValueError(f"rank {ins.rank} lists the same {op!r} object twice; call "
                             f"{op.kind}(...) again for a second op")
        pid = self._new(ins.rank, ins.index, op)
        ins.post = [pid]
        if op.blocking:
            ins.wait = [pid]
            return
        handles.ops[id(op)], handles.names[id(op)] = [pid], f"h{handles.nhandle}"
        handles.nhandle += 1
        handles.outstanding.append(pid)

    def _post_batch(self, ins: Instr, item: Batch, handles: _Handles):
        nbatch = handles.nbatch
        ids = [self._new(ins.rank, ins.index, op, nbatch) for op in item.ops]
        for i, (op, pid) in enumerate(zip(item.ops, ids)):
            handles.ops[id(op)], handles.names[id(op)] = [pid], f"b{nbatch}[{i}]"
        handles.ops[id(item)], handles.names[id(item)] = ids, f"b{nbatch}"
        ins.post = ids
        handles.outstanding += ids
        handles.nbatch += 1

    def lines(self) -> list[str]:
        """One rank per line ('  rank 0: send(1, 10); recv(1, 10)'), wrapped between calls."""
        out = []
        for r in range(self.world_size):
            out += wrap_calls(f"  rank {r}: ", [i.text for i in self.instrs[r]] or ["(nothing)"],
                              96)
        return out

    def __str__(self):
        return "\n".join(self.lines())

    def __repr__(self):
        return f"<Schedule on {self.world_size} ranks>\n{self}"

    def normal_form(self) -> dict:
        """rank -> calls as plain tuples, consecutive waits merged: two schedules with the
        same normal form make the same calls (`==` compares these)."""
        return {r: self._normal_calls(instrs) for r, instrs in self.instrs.items()}

    def _normal_calls(self, instrs) -> list:
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
        return calls

    def __eq__(self, other):
        try:
            other = as_schedule(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self.world_size == other.world_size and self.normal_form() == other.normal_form()

    __hash__ = None


def unpaired_self_ops(sched: Schedule) -> set:
    """NCCL's rule for point-to-point with the rank itself: inside one group (one call, or
    one batch: `batch_isend_irecv` is one ncclGroupStart/End on NCCL) every send to self
    needs a receive from self and the reverse, paired in order; the op ids that have no
    partner in their own call. NCCL's group launch rejects them with ncclInvalidUsage
    ("Trying to recv to self without a matching send", its p2p scheduling code), and
    torch checks ncclGroupEnd's result, so the call raises. Modelled, never run here."""
    out = set()
    for instrs in sched.instrs.values():
        for ins in instrs:
            selfs = [sched.ops[pid] for pid in ins.post if sched.ops[pid].peer == ins.rank]
            sends = [p.id for p in selfs if p.send]
            recvs = [p.id for p in selfs if not p.send]
            n = min(len(sends), len(recvs))
            out.update(sends[n:] + recvs[n:])
    return out


def as_schedule(schedule) -> Schedule:
    return schedule if isinstance(schedule, Schedule) else Schedule(schedule)


def _check_programs(programs):
    if not isinstance(programs, dict) or not programs:
        raise TypeError("a schedule is a dict {rank: [calls...]}, e.g. "
                        "{0: [send(1, 10)], 1: [recv(0, 10)]}")
    for r, prog in programs.items():
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise TypeError(f"schedule keys are ranks (ints >= 0), got {r!r}")
        if not isinstance(prog, (list, tuple)):
            raise TypeError(f"rank {r}: expected a list of calls, got {prog!r}")


def _wait_for(ins: Instr, item: Wait, handles: _Handles):
    if item.target is None:
        ins.wait = list(handles.outstanding)
    elif id(item.target) in handles.ops:
        ins.wait = handles.ops[id(item.target)]
        ins.text = f"wait({handles.names[id(item.target)]})"
    else:
        raise ValueError(f"rank {ins.rank}, call #{ins.index}: {item!r} waits on a handle "
                         f"this rank has not posted before it")
    handles.outstanding = [p for p in handles.outstanding if p not in ins.wait]
    # gloo: each wait() consumes the op's completion; a second one blocks.
    ins.rewait = [p for p in ins.wait if p in handles.waited]
    handles.waited.update(ins.wait)


def _name_waited_handles(instrs, names):
    """Show a handle's name only where a wait refers to it: 'h0 = isend(1, 10); wait(h0)'."""
    used = {ins.text[5:-1].split("[")[0] for ins in instrs
            if isinstance(ins.item, Wait) and ins.item.target is not None}
    for ins in instrs:
        if isinstance(ins.item, (ScheduledOp, Batch)) and id(ins.item) in names \
                and names[id(ins.item)] in used:
            ins.text = f"{names[id(ins.item)]} = {ins.text}"
