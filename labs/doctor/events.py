"""What a rank tells the doctor: one `Event` per line of JSON in a file of its own.

Each rank appends to `<dir>/rank<R>.jsonl` and flushes every line, so the events of a rank
that is killed in a hang are on disk up to the call it hangs in.

GPU scripts (labs/doctor/cuda.py maps CUDA onto the CPU and NCCL onto gloo): every "call" and
"post" event carries `stream`, the stand-in CUDA stream that was current when the op was
posted: "" when the script never used CUDA streams (no torch.cuda.Stream, stream(),
current_stream(), default_stream(), Event or record_stream on this rank; ranks.py turns an
early "" into "default" once the rank used any), "default" for the default stream, and
"side 1", "side 2", ... for the script's torch.cuda.Stream() objects in creation order. An
"init" event follows every init_process_group that returned: `text` is the backend the script
asked for ("" if none), `index` 1 when it passed device_id (NCCL's eager init), else 0; a
"new_group" event likewise for new_group (text: the backend asked, numel: its size, 0 for
every rank). A wait on a Work inside a side stream is recorded like any wait: the NCCL
model reasons from the op's `stream`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path


@dataclass
class Event:
    """One thing that happened on one rank. `event` is one of:

    start     the script starts (numel: the world size)
    ready     the record is ready (elapsed_s: its one-time start-up cost in this process)
    backend   what the run changed (text: the report's header line, e.g. the script asked
              for nccl and CUDA: run on gloo, CUDA mapped onto the CPU); the last one counts
    init      init_process_group returned (text: the backend asked; index: 1 with device_id)
    new_group new_group returned (text: the backend asked; numel: the group's size, 0 = all;
              group: its name, "" on a rank outside it)
    call      a communication call is about to run (op fields below); "post" or "raised"
              follows unless the rank was stopped inside the call
    post      the call returned: the op reached the process group
    raised    the call raised before it was posted (text: the error)
    wait      a wait on the op's Work starts (where: the code that waits)
    waited    the wait returned (text: how a buffer changed in flight, if it did; peer: the
              sender of a receive from any source)
    wait_failed  the wait raised (text: the error)
    touched   the program used a buffer of the op while it was in flight (text: how)
    raced     a CUDA stream (stream) touched a received buffer after its wait but before the
              stream was ordered after the stream that waited (text: how; where: the use)
    batch     a batch_isend_irecv call returned (seqs: its ops; nworks: the Works returned)
    work      the script waited on the Work at position `index` of a batch's list
    destroyed destroy_process_group() of every group returned (numel: gloo's group
              worker threads still running, 0 when the groups were freed; where: the call;
              text: what still holds a group, "; "-separated)
    device    before the first communication call of a rank that used CUDA (index: its
              current device; text: the device indices it named, ","-separated)
    exit      the script ended (text: its exception, if any; where: the line that raised;
              kind "python": raised by torch.distributed's own Python, name: the API and
              the function that raised; kind "polled": the record stopped a loop polling
              is_completed(), seq: the op polled)
    frames    the script's frames of a `where` above, innermost first (frames: [{file, line,
              function}], the first at `where`), once per distinct chain of calls on the rank
    """

    rank: int
    event: str
    t: float
    seq: int = -1                # the op's number on its rank, in post order
    kind: str = ""               # send | recv | sync | collective
    name: str = ""
    api: str = ""
    peer: int | None = None
    numel: int = 0
    dtype: str = ""
    tag: int = 0
    nbytes: int = 0
    where: str = ""
    batch: int | None = None
    text: str = ""
    seqs: list | None = None
    nworks: int = 0
    index: int = -1
    overhead_s: float = 0.0      # exit: time spent in the doctor's own code on this rank
    elapsed_s: float = 0.0       # exit: how long the script ran on this rank
    stream: str = ""             # call/post: the CUDA stream current at the post (see above)
    frames: list | None = None   # frames: the chain of calls (see above)
    group: str = ""              # call/post/raised: the process group's name ("0": default)
    group_ranks: list | None = None   # its members' global ranks, in group-rank order

    def to_line(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items()
                           if v != _DEFAULTS.get(k)}) + "\n"

    @classmethod
    def from_line(cls, line: str) -> Event:
        return cls(**json.loads(line))


_DEFAULTS = {f.name: f.default for f in fields(Event) if f.name not in ("rank", "event", "t")}


def rank_file(folder: Path | str, rank: int) -> Path:
    return Path(folder) / f"rank{rank}.jsonl"


def read_events(folder: Path | str) -> dict[int, list[Event]]:
    """rank -> its events, in order. A line cut short by a kill is left out."""
    out = {}
    for path in sorted(Path(folder).glob("rank*.jsonl")):
        events = []
        for line in path.read_text(errors="replace").splitlines():
            try:
                events.append(Event.from_line(line))
            except (ValueError, TypeError):
                continue
        out[int(path.stem[4:])] = events
    return dict(sorted(out.items()))


def last_state(events: list[Event]) -> str:
    """'exited', 'waiting' (a wait or a call started and did not return) or 'running'."""
    open_waits = set()
    for e in events:
        if e.event == "exit":
            return "exited"
        if e.event in ("wait", "call"):
            open_waits.add((e.event, e.seq))
        elif e.event in ("waited", "wait_failed"):
            open_waits.discard(("wait", e.seq))
        elif e.event in ("post", "raised"):
            open_waits.discard(("call", e.seq))
    return "waiting" if open_waits else "running"
