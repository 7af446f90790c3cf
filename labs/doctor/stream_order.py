"""Which CUDA streams may read a received buffer, from what the script asked of the stand-in
streams (labs/doctor/standin.py). Nothing runs on those streams here: the order is modelled
from the calls, the way CUDA would enforce it on a GPU.

On NCCL, `Work.wait()` makes the stream current at the wait wait for the transfer, not the
host and not other streams (torch 2.13's Work.wait docstring: "Letting the current stream
block on the completion of the NCCL work"). A received buffer is then safe on that stream,
and on every stream ordered after it since: `dst.wait_stream(src)`, an Event recorded on src
and waited on dst, or a host synchronize of the stream, the event or the device. Any other
stream that touches the buffer races with the transfer.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from labs.harness.grading.buffers import ByteRange

WAIT_SOURCE = ("torch 2.13, Work.wait's docstring (torch._C._distributed_c10d): 'Letting the "
               "current stream block on the completion of the NCCL work'; torch docs, CUDA "
               "semantics: ops on different streams are ordered only by wait_stream, events "
               "or synchronize")


@dataclass
class Landed:
    """A receive's bytes after its wait: safe on `streams` only."""

    seq: int
    range: ByteRange
    waited_on: str                    # the stream current at the wait
    where: str                        # the wait's line
    owner: object                     # weakref to the tensor: gone, its bytes are someone else's
    streams: set = field(default_factory=set)
    told: bool = False
    blocking: bool = False            # a blocking recv: its own wait() (distributed_c10d.recv)

    def wait_said(self) -> str:
        how = "the blocking recv (it waits)" if self.blocking else "a wait()"
        return f"{how} issued on stream '{self.waited_on}' at {self.where}"


class StreamOrder:
    def __init__(self):
        self.landed: list[Landed] = []

    def land(self, seq: int, tensor, r: ByteRange, stream: str, where: str,
             blocking: bool = False) -> None:
        base = tensor._base if tensor._base is not None else tensor
        self.landed = [x for x in self.landed if x.range != r]    # received again: this one
        self.landed.append(Landed(seq, r, stream, where, weakref.ref(base), {stream},
                                   blocking=blocking))

    def snapshot(self, stream: str) -> list:
        """What an Event recorded on `stream` now carries: the buffers safe on it."""
        return [x for x in self.landed if stream in x.streams]

    def join(self, stream: str, carried: list) -> None:
        """`stream` waits for an event (or a stream): what was safe there is safe here."""
        for x in carried:
            x.streams.add(stream)

    def wait_stream(self, waiting: str, waited: str) -> None:
        self.join(waiting, self.snapshot(waited))

    def settle(self, carried: list | None = None) -> None:
        """The host waited (for these buffers, or for the whole device): safe everywhere."""
        done = {id(x) for x in (self.landed if carried is None else carried)}
        self.landed = [x for x in self.landed if id(x) not in done]

    def race(self, r: ByteRange, stream: str) -> Landed | None:
        """The landed buffer that `stream` may not touch yet among those `r` overlaps."""
        self.landed = [x for x in self.landed if x.owner() is not None]
        for x in self.landed:
            if not x.told and stream not in x.streams and x.range.overlaps(r):
                x.told = True
                return x
        return None
