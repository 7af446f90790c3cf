"""What a worker and the launching process say to each other, as small dataclasses.

Worker -> parent, over the worker's pipe:
    Joined     the rank is in the process group (the launch timeout starts counting)
    Returned   fn returned `value`
    Failed     fn (or joining) raised; `.unsolved` if it was an unsolved exercise's stub
    StatusReply the answer to a StatusRequest: what the rank is doing right now

Parent -> worker:
    StatusRequest  "what are you blocked in?" (asked when a launch hangs or fails)
    Release        every rank has returned: destroy the group and exit
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from labs.harness.ranks.exercises import Unsolved
from labs.harness.ranks.words import Words
from labs.harness.ranks.tracing import Event


class Phase(Words):
    """Where a rank is in its launch."""

    CONNECT = "connect"     # starting, or joining the process group
    RUN = "run"             # in fn (the launch timeout counts from here)


class Hang(Words):
    """Which deadline a hung launch missed."""

    JOIN = "join"           # not every rank joined the group within JOIN_TIMEOUT
    DEADLINE = "deadline"   # every rank joined, fn gave no result within the launch timeout
    STUCK = "stuck"         # every rank still running sat waiting, nothing completed (stuck_after)
    QUIET = "quiet"         # no sign of progress anywhere for the launch timeout (stuck_after)
    NO_PEER = "no peer"     # a rank waits on a peer that is not a rank of the group (stuck_after)
    IDLE = "idle"           # a rank sat outside torch.distributed, no sign of progress (idle_after)


@dataclass
class Idle:
    """A rank told idle (Hang.IDLE): the seconds it sat outside torch.distributed with
    nothing posted, completed or begun, and the CPU seconds it used meanwhile (none to
    speak of: asleep; SPIN_CPU_SECONDS or more: a loop; None: the system cannot say)."""

    seconds: float
    cpu: float | None
    spinning: bool


@dataclass
class RankStatus:
    """One rank at one moment. `blocked_in`: the call its main thread sits in (or the
    blocking call that raised); `outstanding`: non-blocking ops posted, never seen done."""

    rank: int
    phase: Phase = Phase.RUN
    blocked_in: Event | None = None
    blocked_for: float = 0.0
    outstanding: list[Event] = field(default_factory=list)
    last: Event | None = None          # its most recent call
    note: str = ""                     # what we know instead (finished, exited, an error)
    waiting: bool = False              # sitting in a torch.distributed call or a wait()
    progress: tuple = ()               # changes whenever the rank posts, waits or finishes one
    where: str = ""                    # "labs/deadlocks.py:207": the reader's line it sits at

    def describe(self, timings: bool = True, located: bool = False) -> str:
        """'rank 1: blocked 2.0 s in recv(from 0, tag 0, 10 x float32); posted, ...'.
        located: like a compiler, the reader's line first, when known:
        'labs/deadlocks.py:207: rank 1 blocked in recv(from 0, ...)'."""
        if located and self.where:
            line = replace(self, where="").describe(timings).split(": ", 1)[1]
            return f"{self.where}: rank {self.rank} {line}"
        if self.blocked_in is not None:
            how_long = f" {self.blocked_for:.1f} s" if timings else ""
            line = f"rank {self.rank}: blocked{how_long} in {self.blocked_in.describe()}"
        elif self.note:
            line = f"rank {self.rank}: {self.note}"
        elif self.phase == Phase.CONNECT:
            line = f"rank {self.rank}: still starting or joining the process group"
        else:
            last = f"(its last call: {self.last.describe()})" if self.last else "(it had made none)"
            at = f", at {self.where}" if self.where else ""   # asleep, computing: its line
            line = f"rank {self.rank}: not inside a torch.distributed call{at} {last}"
        if self.outstanding:
            line += "; posted, not completed: " + ", ".join(e.describe() for e in self.outstanding)
        return line


@dataclass
class Frame:
    """One line of a worker's traceback: `file` relative to the course when it is ours."""

    file: str
    line: int
    function: str
    code: str


@dataclass
class Joined:
    rank: int


@dataclass
class Returned:
    rank: int
    value: object
    events: list[Event]


@dataclass
class Failed:
    rank: int
    summary: str                       # "ValueError: first line of the message"
    traceback: str
    phase: Phase
    status: RankStatus
    events: list[Event]
    frames: list[Frame] = field(default_factory=list)   # outermost first, as Python prints
    unsolved: Unsolved | None = None   # it was an exercise's stub: which one (not a bug)
    interrupted: bool = False          # a KeyboardInterrupt: the reader stopped the kernel
    message: str = ""                  # the exception's whole message (summary: its first line)


@dataclass
class StatusReply:
    status: RankStatus
    events: list[Event]


@dataclass
class StatusRequest:
    events: bool = True     # False: the status alone (the launch's watch for a stuck run)


@dataclass
class Release:
    pass


def describe_statuses(statuses: dict, timings: bool = True, located: bool = False) -> list[str]:
    """One line per rank, in rank order: the one place these lines are written."""
    return [statuses[r].describe(timings, located) for r in sorted(statuses)]
