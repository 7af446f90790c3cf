"""Buffers in flight: the program must not read a receive buffer, nor write a send buffer,
between the post and the wait (lesson 03). A TorchDispatchMode sees every tensor op the
script runs; while some op is in flight it checks the bytes the op touches against the bytes
of the buffers in flight (labs.harness.grading.buffers.ByteRange: exact for views, so a
read of row k while row j of the same tensor is being received is fine). A view op
touches no byte. It costs nothing while nothing is in flight.

A buffer posted while an overlapping buffer is in flight is caught at its post: a receive
into a tensor that is being sent (the one-shift "ring" of lesson 08), or two receives into
one buffer. A storage freed (`untyped_storage().resize_(0)`) under a buffer in flight is
caught at the resize; the watch never reads a buffer's bytes, so a freed one cannot crash it.

With CUDA streams (the stand-in's), a received buffer stays watched after its wait: only
streams ordered after the stream that waited may touch it (labs/doctor/stream_order.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from labs.doctor.stream_order import StreamOrder
from labs.harness.grading.buffers import ByteRange, byte_range
from labs.harness.grading.record import _NAMESPACES, _NO_DATA, caller

FREED = "the program freed its buffer's storage (untyped_storage().resize_) before the wait"


@dataclass
class Flying:
    seq: int
    send: bool
    range: ByteRange
    tensor: torch.Tensor      # kept while in flight: a received one may land (streams)
    told: bool = False


def _written(func, args, kwargs) -> set[int]:
    """ids of the tensors `func` writes (in-place and out= arguments)."""
    out = set()
    for i, arg in enumerate(func._schema.arguments):
        info = arg.alias_info
        if info is None or not info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        for t in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(t, torch.Tensor):
                out.add(id(t))
    return out


def _flat(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, torch.Tensor))


class BufferWatch(TorchDispatchMode):
    """`report(seq, where, text)` is called once per op whose buffer is misused;
    `raced(seq, where, text, stream)` once per received buffer a stream touched before it
    was ordered after the wait; `stream()` names the current stand-in stream ("" without)."""

    def __init__(self, report, raced=None, stream=lambda: ""):
        super().__init__()
        self.report, self.raced, self.stream = report, raced, stream
        self.flying: dict = {}
        self.order = StreamOrder()
        self.own_s = 0.0
        self._resize, self._depth = None, 0     # the real UntypedStorage.resize_, while on

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False      # see labs.harness.grading.record._Recorder: no torch._dynamo import

    def __enter__(self):
        if self._resize is None:           # once, however often the mode is re-entered
            self._resize = resize = torch.UntypedStorage.resize_

            def resize_(storage, size):
                self.resizing(storage, size)
                return resize(storage, size)
            torch.UntypedStorage.resize_ = resize_
        self._depth += 1
        return super().__enter__()

    def __exit__(self, *exc):
        self._depth -= 1
        if not self._depth:
            torch.UntypedStorage.resize_, self._resize = self._resize, None
        return super().__exit__(*exc)

    def posted(self, seq: int, send: bool, tensors) -> None:
        for t in tensors:
            r = byte_range(t)
            if r is not None:
                self._clash_at_post(seq, send, r)
                self.flying[(seq, r.offset)] = Flying(seq, send, r, t)

    def landed(self, seq: int, tensors, where: str) -> None:
        """A blocking receive returned: on NCCL its bytes are safe on the current stream."""
        stream = self.stream()
        for t in tensors if stream else ():
            r = byte_range(t)
            if r is not None:
                self.order.land(seq, t, r, stream, where, blocking=True)

    def _clash_at_post(self, seq, send, r):
        for f in self.flying.values():
            if f.told or (send and f.send) or not f.range.overlaps(r):
                continue
            f.told = True
            this = "a send" if send else "a receive"
            that = "a send" if f.send else "a receive"
            self.report(f.seq, caller()[0], f"{this} (op #{seq}) was posted on its buffer "
                        f"while {that} on the same memory was in flight")

    def resizing(self, storage, size: int) -> None:
        """A storage shrunk under a buffer in flight: the transfer's memory is gone."""
        for f in self.flying.values():
            if not f.told and f.range.storage == storage.data_ptr() and size < f.range.hi:
                f.told = True
                self.report(f.seq, caller()[0], FREED)

    def done(self, seq: int, where: str = "", waited: bool = True) -> None:
        stream = self.stream()
        for key in [k for k in self.flying if k[0] == seq]:
            f = self.flying.pop(key)
            if stream and waited and not f.send:
                self.order.land(seq, f.tensor, f.range, stream, where)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (self.flying or self.order.landed) and func.namespace not in _NAMESPACES \
                and not func.is_view and func._opname not in _NO_DATA:
            start = time.perf_counter()
            self._check(func, args, kwargs)
            self.own_s += time.perf_counter() - start
        return func(*args, **kwargs)

    def _check(self, func, args, kwargs):
        written = None
        stream = self.stream() if self.order.landed else ""
        for t in _flat([*args, *kwargs.values()]):
            r = byte_range(t)
            if r is None:
                continue
            for f in self.flying.values():
                if f.told or not f.range.overlaps(r):
                    continue
                if f.send:
                    written = _written(func, args, kwargs) if written is None else written
                    if id(t) not in written:
                        continue
                f.told = True
                verb = "wrote" if f.send else "used"
                self.report(f.seq, caller()[0], f"the program {verb} its buffer "
                            f"({func._opname}) before the wait returned")
            landed = self.order.race(r, stream) if stream else None
            if landed is not None and self.raced is not None:
                self.raced(landed.seq, caller()[0], f"{func._opname} on stream "
                           f"'{stream}', after {landed.wait_said()}", stream)
