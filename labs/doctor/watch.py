"""Buffers in flight: the program must not read a receive buffer, nor write a send buffer,
between the post and the wait (lesson 03). A TorchDispatchMode sees every tensor op the
script runs; while some op is in flight it checks the op's tensors against the byte ranges
of the buffers in flight. It costs nothing while nothing is in flight.

A buffer posted while an overlapping buffer is in flight is caught at its post: a receive
into a tensor that is being sent (the one-shift "ring" of lesson 08), or two receives into
one buffer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from labs.harness.grading.record import _NAMESPACES, caller


@dataclass
class Flying:
    seq: int
    send: bool
    lo: int
    hi: int
    told: bool = False


def span(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, last byte + 1) of the memory `t` can touch."""
    if t.numel() == 0:
        return 0, 0
    lo = t.data_ptr()
    extent = sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    return lo, lo + (extent + 1) * t.element_size()


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
    """`report(seq, where, text)` is called once per op whose buffer is misused."""

    def __init__(self, report):
        super().__init__()
        self.report, self.flying = report, {}
        self.own_s = 0.0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False      # see labs.harness.grading.record._Recorder: no torch._dynamo import

    def posted(self, seq: int, send: bool, tensors) -> None:
        for t in tensors:
            lo, hi = span(t)
            if hi > lo:
                self._clash_at_post(seq, send, lo, hi)
                self.flying[(seq, lo)] = Flying(seq, send, lo, hi)

    def _clash_at_post(self, seq, send, lo, hi):
        for f in self.flying.values():
            if f.told or f.hi <= lo or hi <= f.lo or (send and f.send):
                continue
            f.told = True
            this = "a send" if send else "a receive"
            that = "a send" if f.send else "a receive"
            self.report(f.seq, caller()[0], f"{this} (op #{seq}) was posted on its buffer "
                        f"while {that} on the same memory was in flight")

    def done(self, seq: int) -> None:
        for key in [k for k in self.flying if k[0] == seq]:
            del self.flying[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.flying and func.namespace not in _NAMESPACES:
            start = time.perf_counter()
            self._check(func, args, kwargs)
            self.own_s += time.perf_counter() - start
        return func(*args, **kwargs)

    def _check(self, func, args, kwargs):
        written = None
        for t in _flat([*args, *kwargs.values()]):
            lo, hi = span(t)
            for f in self.flying.values():
                if f.told or f.hi <= lo or hi <= f.lo:
                    continue
                if f.send:
                    written = _written(func, args, kwargs) if written is None else written
                    if id(t) not in written:
                        continue
                f.told = True
                verb = "wrote" if f.send else "used"
                self.report(f.seq, caller()[0], f"the program {verb} its buffer "
                            f"({func._opname}) before the wait returned")
