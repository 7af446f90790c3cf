"""The schedule language: each rank's point-to-point calls, written as data.

    send(peer, numel, dtype="float32", tag=0)     blocking, like dist.send
    recv(peer, numel, ...)                        blocking; peer None: any source
    isend(...), irecv(...)                        post and return a handle to `wait` on
    batch([isend(..), irecv(..)])                 one batch_isend_irecv call
    wait(handle) / wait(the_batch) / wait()       one op, a whole batch, everything posted
    barrier(), collective(name)                   every rank must enter it
    compute(label, seconds)                       local work, no communication
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from labs.harness.ranks.calls import SENDS, P2PCall

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8")


def itemsize(dtype: str) -> int:
    return getattr(torch, dtype).itemsize


@dataclass(eq=False)
class ScheduledOp:
    """One point-to-point call of a schedule (send(...), irecv(...) write them). A
    non-blocking one (isend/irecv) is also its own handle."""

    kind: P2PCall
    peer: int | None           # None: receive from any source
    numel: int
    dtype: str = "float32"
    tag: int = 0

    def __post_init__(self):
        self.kind = P2PCall(self.kind)          # "send" as written, or the member itself
        if isinstance(self.dtype, torch.dtype):
            self.dtype = str(self.dtype).replace("torch.", "")
        if self.dtype not in DTYPES:
            raise ValueError(f"{self.kind}: dtype must be one of {', '.join(DTYPES)}, "
                             f"got {self.dtype!r}")
        if self.peer is None and self.is_send:
            raise ValueError(f"{self.kind} needs a destination rank (only receives may use "
                             f"None = any source)")
        if self.peer is not None and (isinstance(self.peer, bool)
                                      or not isinstance(self.peer, int)):
            raise TypeError(f"{self.kind}: peer must be a rank (int), got {self.peer!r}")
        if isinstance(self.numel, bool) or not isinstance(self.numel, int) or self.numel < 1:
            raise ValueError(f"{self.kind}: numel must be a positive int, got {self.numel!r}")
        if isinstance(self.tag, bool) or not isinstance(self.tag, int) or self.tag < 0:
            raise ValueError(f"{self.kind}: tag must be an int >= 0, got {self.tag!r}")

    @property
    def is_send(self) -> bool:
        return self.kind in SENDS

    @property
    def blocking(self) -> bool:
        return self.kind.blocking

    @property
    def nbytes(self) -> int:
        return self.numel * itemsize(self.dtype)

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


def send(peer, numel, dtype="float32", tag=0) -> ScheduledOp:
    """Blocking send of `numel` elements of `dtype` to rank `peer` (dist.send)."""
    return ScheduledOp(P2PCall.SEND, peer, numel, dtype, tag)


def recv(peer, numel, dtype="float32", tag=0) -> ScheduledOp:
    """Blocking receive into a buffer of `numel` x `dtype` (dist.recv); peer None: any source."""
    return ScheduledOp(P2PCall.RECV, peer, numel, dtype, tag)


def isend(peer, numel, dtype="float32", tag=0) -> ScheduledOp:
    """Non-blocking send (dist.isend); the returned op is the handle to `wait` on."""
    return ScheduledOp(P2PCall.ISEND, peer, numel, dtype, tag)


def irecv(peer, numel, dtype="float32", tag=0) -> ScheduledOp:
    """Non-blocking receive (dist.irecv); the returned op is the handle to `wait` on."""
    return ScheduledOp(P2PCall.IRECV, peer, numel, dtype, tag)


def batch(ops) -> Batch:
    """One batch_isend_irecv call over isend/irecv ops (on gloo: posted one by one)."""
    ops = list(ops)
    if not ops:
        raise ValueError("batch([]) is empty (batch_isend_irecv raises IndexError)")
    for op in ops:
        if not isinstance(op, ScheduledOp) or op.blocking:
            raise ValueError(f"a batch holds isend/irecv ops (P2POp only accepts dist.isend "
                             f"or dist.irecv), got {op!r}")
        if op.peer is None:
            raise ValueError("a P2POp needs a peer: any-source receive is only available "
                             "as recv(None, ...) or irecv(None, ...)")
    return Batch(ops)


def wait(handle=None) -> Wait:
    """Wait for an isend/irecv handle or a whole batch; wait() waits for everything posted."""
    if handle is not None and not isinstance(handle, (ScheduledOp, Batch)):
        raise TypeError(f"wait() takes an isend/irecv handle or a batch, got {handle!r}")
    if isinstance(handle, ScheduledOp) and handle.blocking:
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
