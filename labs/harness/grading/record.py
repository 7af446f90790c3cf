"""The complete record of what one rank asked of the process group, for the graders.

Every collective and point-to-point op of torch 2.13 reaches the dispatcher as an op of
the `c10d` namespace (or `_c10d_functional` for functional collectives), whatever Python
function made it: `dist.*`, their aliases, object collectives, or the process group's own
methods (`pg.allreduce`, `pg.send`). A TorchDispatchMode sees every one of them there, so
the record does not depend on a list of function names.

Works are followed by identity: the Work an op returns is the same Python object the caller
gets, and `Work.wait` / `Work.is_completed` are patched on the class, so a wait is seen
however the Work travelled. At post time the record keeps what each buffer held; at wait
time it checks that nobody changed a buffer while it was in flight.

    with record() as ops:          # ops: list[Op], filled as calls happen
        fn(tensor)

Each op also carries `where`, the file:line of the code that made the call (the first frame
outside torch, the standard library and the course's machinery), and `api`, the
torch.distributed function that was called. `listen(callback)` hands every event to a
callback as it happens, `callback(event, op, **info)`: "call" (before the call runs), "post"
(tensors=, it returned), "raised" (error=, the call raised: the op never reached the list),
"wait" (before a Work's wait), "waited" (work=), "wait_failed" (error=). The point-to-point
doctor (labs.doctor) streams them to a file; the graders only read the list.
"""
from __future__ import annotations

import _thread
import contextlib
import threading
import time
from dataclasses import dataclass, field

import torch
import torch._C._distributed_c10d as c10d_C
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

from labs.harness.grading import callers, tags
from labs.harness.grading.buffers import (DIGESTS, DISTINCT, READ_ONLY, _tensors, changed_lent, decoded,
                                          digest, distinct, note_writes, overlap, same_bytes)
from labs.harness.grading.callers import caller, forbidding  # noqa: F401 (re-exported)
from labs.harness.grading.ops import SYNC_ONLY, Op, _classify  # noqa: F401 (re-exported)
from labs.harness.grading.tags import ignoring_tags  # noqa: F401 (re-exported)
from labs.harness.grading.timeline import trace as _trace, trace_wait as _trace_wait
from labs.harness.ranks import tracing

@dataclass
class _InFlight:
    op: Op
    sent: list = field(default_factory=list)       # (tensor, its values at post)
    received: list = field(default_factory=list)   # (tensor, its version at post)
    buffers: list = field(default_factory=list)    # a receive's tensors (views too)
    sending: list = field(default_factory=list)    # a send's tensors (views too)
    event: object = None        # its timeline event, if the record put it there


_ACTIVE: list[list[Op]] = []          # the records being filled (nested: outermost first)
_WORKS: dict[int, tuple] = {}         # id(Work) -> (Work, _InFlight): kept alive until waited
_LISTENERS: list = []                 # callables (event, op, **info), see the docstring

def _notify(event: str, op: Op, **info) -> None:
    for listener in list(_LISTENERS):
        listener(event, op, **info)


@contextlib.contextmanager
def listen(callback):
    """`with listen(cb):` cb(event, op, **info) for every event of an open record."""
    _LISTENERS.append(callback)
    try:
        yield
    finally:
        _LISTENERS.remove(callback)


_NAMESPACES = ("c10d", "_c10d_functional", "_c10d_functional_autograd")


def _announce(func, args) -> list[Op]:
    """Listeners hear of a call before it runs: a rank stopped inside it (a peer's abort
    ends the whole job) still leaves the call on its record, as "call" without "post"."""
    found = _classify(func._opname, args)
    ops = found if isinstance(found, list) else [found] if found else []
    if not ops:
        return ops
    where, api = caller()
    first = len(_ACTIVE[-1]) if _ACTIVE else 0
    for i, op in enumerate(ops):
        op.where, op.api, op.seq = where, api, first + i
        _notify("call", op)
    return ops


def _raised(announced: list[Op], error):
    """A call that raised never reaches the list; listeners still hear of it."""
    for op in announced:
        _notify("raised", op, error=f"{type(error).__name__}: {error}")


class _Recorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable by default, which
        # imports torch._dynamo at the first op under the mode: 2-8 s per process here.
        # The record never runs under torch.compile, so it opts out.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace not in _NAMESPACES:
            _used_in_flight(func, args, kwargs)
            note_writes(func, args, kwargs)
            return func(*args, **(kwargs or {}))
        if tags.TAGLESS:
            args = tags.untagged(func._opname, args)
        announced = _announce(func, args) if _LISTENERS else []
        try:
            out = func(*args, **(kwargs or {}))
        except Exception as error:
            _raised(announced, error)
            raise
        found = _classify(func._opname, args)
        if found is None:
            return out
        _append(found, func, args)
        # While graded: no course wrapper saw this call, so the record puts it on the trace.
        untraced = bool(_ACTIVE) and not tracing.TRACER._depth()
        if isinstance(found, list):        # functional batch: waited through its tensors
            _functional_batch(found, untraced)
            return out
        op = found
        works = [o for o in (out if isinstance(out, tuple) else (out,))
                 if isinstance(o, torch.ScriptObject)]
        event = _trace(op, blocking=not works) if untraced else None
        if works:
            op.returned_work = True
            _watch(c10d_C.Work.unbox(works[0]), op, args, event)
        elif func.namespace != "c10d":
            op.returned_work, op.waited = False, True   # functional: waited through its tensor
        if not op.returned_work:                        # blocking: done when it returns
            op.waited_at = op.seq + 1
        _notify("post", op, tensors=_tensors(args[0]) if args else [])
        return out


def _append(found, func, args):
    """Who made the call, what each send holds, whose memory each receive writes; then onto
    every open record."""
    where, api = caller()
    borrowed = callers.borrowed()
    ops = found if isinstance(found, list) else [found]
    buffers = args[3] if func._opname == "batch_p2p_ops" else [_tensors(args[0])] * len(ops)
    for op, tensors in zip(ops, buffers):
        op.where, op.api, op.borrowed = where, api, borrowed
        if DIGESTS and DIGESTS[-1] and op.kind == "send":
            op.digest = digest(tensors)
        if DISTINCT and op.kind == "send":
            if DISTINCT[-1].positions:
                op.values, op.descents, op.encoded, op.pieces = decoded(
                    tensors, DISTINCT[-1].positions, DISTINCT[-1].starts)
            else:
                op.values = distinct(tensors)
        if READ_ONLY and op.kind == "recv":
            op.into = next((name for name, t, _ in READ_ONLY[-1].tensors
                            for b in _tensors(tensors) if overlap(b, t)), "")
        if READ_ONLY:
            op.lent_changed = changed_lent()
        for record_ in _ACTIVE:
            op.seq = len(record_)
            record_.append(op)


def _functional_batch(ops, untraced):
    for op in ops:
        op.waited, op.waited_at = True, op.seq + 1
        _notify("post", op, tensors=[])
        if untraced:
            _trace(op, blocking=True)


# Ops that touch a tensor's shape or dtype only, never its values.
_NO_DATA = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "new_empty",
                      "new_empty_strided", "new_zeros", "new_ones", "new_full", "detach",
                      "alias", "lift_fresh", "sym_size", "sym_stride", "sym_numel",
                      "is_same_size", "_has_compatible_shallow_copy_type"})


def _written(func, args, kwargs) -> list:
    """The tensors an op writes: its arguments the schema marks as written (Tensor(a!))."""
    out = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            out += _tensors(args[i] if i < len(args) else (kwargs or {}).get(arg.name))
    return out


def _used_in_flight(func, args, kwargs):
    """A computation that reads (or writes) a receive's buffer, or writes a send's buffer,
    before its wait: the data may not be there yet, or gloo may read what was written (even
    a write undone before the wait), and on gloo it usually works, so only the record can
    tell."""
    if not _WORKS or _CHECKING or func.is_view or func._opname in _NO_DATA:
        return
    name = func._opname
    flights = [flight for _, flight in list(_WORKS.values())
               if (flight.buffers or flight.sending) and not flight.op.changed_in_flight]
    if not flights:
        return
    used = _tensors(list(args) + list((kwargs or {}).values()))
    written = _written(func, args, kwargs) if any(f.sending for f in flights) else []
    for flight in flights:
        if any(overlap(t, b) for t in used for b in flight.buffers):
            flight.op.changed_in_flight = (f"its receive buffer was used ({name}) before the "
                                           f"receive was waited")
        elif any(overlap(t, b) for t in written for b in flight.sending):
            flight.op.changed_in_flight = (f"its send buffer was written ({name}) before the "
                                           f"send was waited")


def _read_outside_torch(tensor, how):
    """A receive's buffer read through numpy, tolist(), DLPack or its address (no torch op,
    so the dispatcher never sees it) by the body before its wait."""
    if not _WORKS or _CHECKING or not _ACTIVE or not callers.by_the_body(2):
        return
    for _, flight in list(_WORKS.values()):
        if not flight.op.changed_in_flight and any(overlap(tensor, b) for b in flight.buffers):
            flight.op.changed_in_flight = (f"its receive buffer was read ({how}) before the "
                                           f"receive was waited")


def _reading(how, original):
    def method(self, *args, **kwargs):
        _read_outside_torch(self, how)
        return original(self, *args, **kwargs)
    method.__name__ = how
    return method


def _watch(work, op, args, event=None):
    op.work_id = id(work)
    flight = _InFlight(op, event=event)
    tensors = _tensors(args[0])
    if op.kind == "send":           # in __torch_dispatch__: the record's own clones pass by
        flight.sent = [(t, t.detach().clone()) for t in tensors]
        flight.sending = [t for t in tensors if t.numel()]
    elif op.kind == "recv":
        # A view shares its version counter with the rest of its base: only whole tensors
        # tell us for sure that the receive buffer itself was written.
        flight.received = [(t, t._version) for t in tensors if t._base is None]
        flight.buffers = [t for t in tensors if t.numel()]
    _WORKS[id(work)] = (work, flight)


_CHECKING: list = []       # non-empty while the record compares buffers: not the body's use


def _done(work, waited=False):
    _POLLED.pop(id(work), None)
    entry = _WORKS.pop(id(work), None)
    if entry is None or entry[0] is not work:
        return
    _CHECKING.append(True)
    try:
        _check_buffers(entry[1], waited, work)
    finally:
        _CHECKING.pop()


def _check_buffers(flight, waited, work=None):
    flight.op.waited = True
    if flight.op.kind == "recv" and flight.op.peer is None and work is not None:
        try:     # a receive from any source: where it came from (Op.source)
            flight.op.source = work._source_rank()
        except RuntimeError:
            pass
    if flight.op.waited_at is None:
        flight.op.waited_at = len(_ACTIVE[-1]) if _ACTIVE else None
    if flight.event is not None:       # an op the record put on the timeline: its wait too
        _trace_wait(flight.event, waited)
    for tensor, before in flight.sent:
        if not same_bytes(tensor, before):
            flight.op.changed_in_flight = "its send buffer was written before the send was waited"
    for tensor, version in flight.received:
        if tensor._version != version:
            flight.op.changed_in_flight = ("its receive buffer was written before the receive "
                                           "was waited")


_original_wait = c10d_C.Work.wait
_original_is_completed = c10d_C.Work.is_completed


def op_of(work) -> Op | None:
    """The recorded op a Work belongs to, while nobody has waited for it."""
    entry = _WORKS.get(id(work))
    return entry[1].op if entry is not None and entry[0] is work else None


def _wait(self, *args, **kwargs):
    op = op_of(self) if _LISTENERS else None
    if op is not None:
        _notify("wait", op)
    tracing.TRACER.raw_waits += 1      # launch's stuck_after: this rank sits in a wait
    try:
        result = _original_wait(self, *args, **kwargs)
    except Exception as error:
        if op is not None:
            _notify("wait_failed", op, error=f"{type(error).__name__}: {error}")
        raise
    finally:
        tracing.TRACER.raw_waits -= 1
        tracing.TRACER.raw_waits_done += 1
    _done(self, waited=True)
    if op is not None:
        _notify("waited", op, work=self)
    return result


_POLLED: dict[int, float] = {}       # id(Work) -> when is_completed() first said False


def _is_completed(self):
    op = op_of(self) if _LISTENERS else None
    completed = _original_is_completed(self)
    if completed:
        _done(self)
        if op is not None:
            _notify("waited", op, work=self)
    elif _ACTIVE and id(self) in _WORKS:
        _check_polling(self)
    return completed


def _check_polling(work):
    """A loop polling is_completed() never ends on gloo (a point-to-point request completes
    in wait()), and never reaches gloo's timeout either: say so after as long as that."""
    from labs.harness.grading.run import HANG_SECONDS, GradeFailure
    first = _POLLED.setdefault(id(work), time.monotonic())
    if time.monotonic() - first > HANG_SECONDS:
        op = _WORKS[id(work)][1].op
        raise GradeFailure(f"rank {dist.get_rank()} polled is_completed() on {op.describe()} "
                           f"for {HANG_SECONDS:g} s and it never turned True: on gloo a "
                           f"point-to-point request completes in wait(), not by itself; call "
                           f"wait() on every request")


_original_start = threading.Thread.start


def _start(self, *args, **kwargs):
    """A dispatch mode is per thread: every thread started once the record is installed
    (a helper thread or a pool of the body's own, whenever made) records into the open
    records too, or its communication would go unseen."""
    if not getattr(self, "_recorded", False):
        run, self._recorded = self.run, True

        def recorded_run():
            with _Recorder():
                run()
        self.run = recorded_run
    return _original_start(self, *args, **kwargs)


_original_start_new_thread = _thread.start_new_thread


def _start_new_thread(function, args, kwargs=None):
    """The low-level door to a thread (`_thread.start_new_thread`, which threading.Thread
    does not go through once imported): its thread records too."""
    def recorded(*a, **kw):
        with _Recorder():
            return function(*a, **kw)
    return _original_start_new_thread(recorded, args, kwargs or {})


def install() -> None:
    """Patch Work.wait, Work.is_completed, Thread.start, _thread.start_new_thread and
    Tensor's ways to memory outside torch (idempotent). Free until a record is open."""
    c10d_C.Work.wait = _wait
    c10d_C.Work.is_completed = _is_completed
    threading.Thread.start = _start
    _thread.start_new_thread = _start_new_thread
    for how in ("numpy", "tolist", "__dlpack__", "data_ptr"):
        if not getattr(getattr(torch.Tensor, how), "_in_flight_check", False):
            method = _reading(how, getattr(torch.Tensor, how))
            method._in_flight_check = True
            setattr(torch.Tensor, how, method)


@contextlib.contextmanager
def record():
    """`with record() as ops:` every op that reaches the process group inside the block."""
    install()
    ops: list[Op] = []
    _ACTIVE.append(ops)
    try:
        with _Recorder():
            yield ops
    finally:
        _ACTIVE.remove(ops)


def outstanding(ops) -> list[Op]:
    """Ops that handed back a Work nobody has waited for (or seen completed)."""
    return [op for op in ops if op.returned_work and not op.waited]

