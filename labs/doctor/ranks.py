"""Each rank's events read back as calls: what was posted, waited, touched, and where each
rank was when the run ended."""
from __future__ import annotations

from dataclasses import dataclass, field

from labs.doctor.events import Event

BLOCKING_APIS = frozenset({"send", "recv", "send_object_list", "recv_object_list"})


@dataclass
class Call:
    """One op a rank posted (or tried to: `raised`)."""

    rank: int
    seq: int
    kind: str                 # send | recv | sync | collective
    name: str
    api: str
    peer: int | None
    numel: int
    dtype: str
    tag: int
    nbytes: int
    where: str
    batch: int | None
    t_post: float
    raised: str = ""
    returned: bool = True     # False: the rank was stopped inside the call itself
    wait_where: str = ""      # the code that waited for it (first wait)
    waits: int = 0            # how many waits started
    waited: bool = False
    t_done: float | None = None
    wait_failed: str = ""
    changed: str = ""
    touched: list = field(default_factory=list)      # (where, text)
    raced: list = field(default_factory=list)        # (where, text): a stream read too early
    stream: str = ""          # the CUDA stream it was posted on ("" without CUDA streams)
    group: str = ""           # the process group it was posted on (its name: "0" the default)
    group_ranks: tuple = ()   # that group's global ranks (peers are global ranks too)
    source: int | None = None  # a receive from any source: the rank it came from (at its wait)

    def on_group(self) -> str:
        """'' on the default group, else ' on group 1 (ranks [0, 2])': a group is known by its
        ranks, and by its name where two groups hold the same ranks."""
        if self.group in ("", "0"):
            return ""
        return f" on group {self.group} (ranks {list(self.group_ranks)})"

    @property
    def p2p(self) -> bool:
        return self.kind in ("send", "recv")

    @property
    def blocking(self) -> bool:
        return self.api in BLOCKING_APIS

    def describe(self) -> str:
        """'isend of 10 x float32 to rank 1', 'barrier'."""
        size = f"{self.numel} x {self.dtype}"
        tag = f", tag {self.tag}" if self.tag else ""
        verb = self.api if self.api in ("send", "recv", "isend", "irecv") else self.kind
        if self.batch is not None:
            verb = f"{'isend' if self.kind == 'send' else 'irecv'} (batch_isend_irecv)"
        if self.kind == "send":
            return f"{verb} of {size} to rank {self.peer}{tag}{self.on_group()}"
        if self.kind == "recv":
            src = "any source" if self.peer is None else f"rank {self.peer}"
            return f"{verb} of {size} from {src}{tag}{self.on_group()}"
        return self.name + self.on_group()


@dataclass
class Batch:
    number: int
    seqs: list
    nworks: int
    where: str
    waited_index: set = field(default_factory=set)    # positions of the Works waited on


@dataclass
class RankRun:
    rank: int
    calls: list = field(default_factory=list)
    batches: dict = field(default_factory=dict)       # number -> Batch
    world_size: int = 0
    asked: str = ""                # "the script asked for nccl; run on gloo"
    exit: Event | None = None
    t_start: float = 0.0
    stderr: str = ""
    warmup_s: float = 0.0
    t_last: float = 0.0            # the last event this rank recorded
    destroyed: Event | None = None  # destroy_process_group() of every group: where, threads left
    inits: list = field(default_factory=list)        # "init" events: init_process_group calls
    groups: list = field(default_factory=list)       # "new_group" events

    @property
    def device_id(self) -> bool:
        """The first init_process_group passed device_id (NCCL creates its communicator
        eagerly then, not at each pair's first call)."""
        return bool(self.inits) and self.inits[0].index == 1

    @property
    def by_seq(self) -> dict:
        return {c.seq: c for c in self.calls if not c.raised}

    def blocked(self) -> Call | None:
        """The call this rank sat in when the run ended: a wait that never returned (or
        raised), a call that raised, or a call the rank was stopped inside."""
        for c in reversed(self.calls):
            if c.raised or not c.returned or c.wait_failed or (c.waits and not c.waited):
                return c
        return None

    @property
    def finished(self) -> bool:
        return self.exit is not None and not self.exit.text


def read_rank(rank: int, events: list[Event]) -> RankRun:
    run, calls = RankRun(rank), {}
    for e in events:
        _apply(run, calls, e)
    if any(c.stream for c in run.calls):    # the rank used CUDA streams: the rest were on
        for c in run.calls:                 # the default stream before its first use
            c.stream = c.stream or "default"
    return run


def _apply(run: RankRun, calls: dict, e: Event) -> None:
    run.t_last = max(run.t_last, e.t)
    if e.event == "start":
        run.world_size, run.t_start = e.numel, e.t
    elif e.event == "ready":
        run.warmup_s = e.elapsed_s
    elif e.event == "backend":
        run.asked = e.text
    elif e.event in ("call", "post", "raised"):
        call = Call(run.rank, e.seq, e.kind, e.name, e.api, e.peer, e.numel, e.dtype, e.tag,
                    e.nbytes, e.where, e.batch, e.t, raised=e.text if e.event == "raised" else "",
                    returned=e.event != "call", stream=e.stream, group=e.group,
                    group_ranks=tuple(e.group_ranks or ()))
        announced = calls.pop(e.seq, None)
        if announced is not None and not announced.returned:   # its "call": now it is over
            call.t_post = announced.t_post
            # by identity, from the end: the call announced is almost always the last one
            at = next(i for i in range(len(run.calls) - 1, -1, -1) if run.calls[i] is announced)
            run.calls[at] = call
        else:
            run.calls.append(call)
        if not call.raised:
            calls[e.seq] = call
    elif e.event == "batch":
        run.batches[e.batch] = Batch(e.batch, e.seqs or [], e.nworks, e.where)
    elif e.event == "exit":
        run.exit = e
    elif e.event == "destroyed":
        run.destroyed = e
    elif e.event == "init":
        run.inits.append(e)
    elif e.event == "new_group":
        run.groups.append(e)
    elif e.seq in calls:
        _apply_to_call(run, calls[e.seq], e)


def _apply_to_call(run: RankRun, call: Call, e: Event) -> None:
    if e.event == "wait":
        call.waits += 1
        call.wait_where = call.wait_where or e.where
    elif e.event == "waited":
        call.waited, call.t_done, call.changed = True, e.t, e.text
        call.source = e.peer if call.peer is None else None
    elif e.event == "wait_failed":
        call.wait_failed, call.t_done = e.text, e.t
    elif e.event == "touched":
        call.touched.append((e.where, e.text))
    elif e.event == "raced":
        call.raced.append((e.where, e.text))
    elif e.event == "work" and e.batch in run.batches:
        run.batches[e.batch].waited_index.add(e.index)
