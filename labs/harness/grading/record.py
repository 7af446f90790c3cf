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

from labs.harness.grading import callers
from labs.harness.grading.callers import caller, forbidding  # noqa: F401 (re-exported)
from labs.harness.ranks import tracing

# Ops that move no data: recorded, never counted as a collective that replaces the sends.
SYNC_ONLY = frozenset({"barrier", "monitored_barrier_"})
SENDS = frozenset({"send", "isend"})                       # c10d / _c10d_functional names
RECVS = frozenset({"recv_", "recv_any_source_", "irecv"})
NOT_COMMUNICATION = frozenset({"check_for_nan", "wait_tensor", "_wrap_tensor_autograd"})
# What readers call each collective (the dispatcher's names are the process group's).
PUBLIC_NAMES = {"allreduce_": "all_reduce", "allreduce_coalesced_": "all_reduce_coalesced",
                "allgather_": "all_gather", "_allgather_base_": "all_gather_into_tensor",
                "allgather_coalesced_": "all_gather_coalesced",
                "allgather_into_tensor_coalesced_": "all_gather_into_tensor (coalesced)",
                "reduce_scatter_": "reduce_scatter",
                "_reduce_scatter_base_": "reduce_scatter_tensor",
                "reduce_scatter_tensor_coalesced_": "reduce_scatter_tensor (coalesced)",
                "broadcast_": "broadcast", "reduce_": "reduce", "gather_": "gather",
                "scatter_": "scatter", "alltoall_": "all_to_all",
                "alltoall_base_": "all_to_all_single", "monitored_barrier_": "monitored_barrier"}


@dataclass
class Op:
    """One op that reached the process group, on this rank."""

    kind: str            # "send", "recv", "sync" (barrier) or "collective"
    name: str            # what readers call it: "send", "all_reduce", "all_gather", ...
    peer: int | None     # global rank of the other side (p2p); None: any source, collective
    numel: int           # elements this rank sends (send, collective) or can receive (recv)
    dtype: str           # of the (first) tensor
    tag: int = 0
    seq: int = 0
    returned_work: bool = False   # it handed back a Work the caller must wait for
    waited: bool = False
    waited_at: int | None = None  # how many ops the record held when it was waited
    changed_in_flight: str = ""   # how a buffer changed between post and wait, if it did
    work_id: int | None = None    # id() of the Work it handed back, if any
    where: str = ""               # file:line of the code that made the call
    api: str = ""                 # the torch function it called: "isend", "batch_isend_irecv"
    borrowed: str = ""            # file:line (function) of forbidden code it came through

    def describe(self) -> str:
        size = f"{self.numel} x {self.dtype}"
        if self.kind == "send":
            return f"a send of {size} to rank {self.peer}"
        if self.kind == "recv":
            source = "any source" if self.peer is None else f"rank {self.peer}"
            return f"a receive of {size} from {source}"
        return f"{self.name}({size})"


@dataclass
class _InFlight:
    op: Op
    sent: list = field(default_factory=list)       # (tensor, its values at post)
    received: list = field(default_factory=list)   # (tensor, its version at post)
    buffers: list = field(default_factory=list)    # a receive's tensors (views too)
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


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors(item)]
    return []


def _global(pg_obj, group_rank):
    """The global rank of `group_rank` in the process group the dispatcher was given."""
    try:
        pg = c10d_C.ProcessGroup.unbox(pg_obj)
        return dist.get_global_rank(pg, group_rank)
    except Exception:  # noqa: BLE001 - the default group, or a name: the rank is global
        return group_rank


def _classify(name, args) -> Op | list[Op] | None:
    """The Op(s) a dispatcher call is, from its name and arguments (schemas of torch 2.13)."""
    if name in NOT_COMMUNICATION:
        return None
    tensors = _tensors(args[0]) if args else []
    first = tensors[0] if tensors else None
    dtype = str(first.dtype).removeprefix("torch.") if first is not None else ""
    numel = sum(t.numel() for t in tensors)
    if name == "send":                            # (tensors, pg, dst, tag)
        return Op("send", "send", _global(args[1], args[2]), numel, dtype, tag=args[3])
    if name == "recv_":                           # (tensors, pg, src, tag)
        return Op("recv", "recv", _global(args[1], args[2]), numel, dtype, tag=args[3])
    if name == "recv_any_source_":                # (tensors, pg, tag)
        return Op("recv", "recv", None, numel, dtype, tag=args[2])
    if name in ("isend", "irecv"):                # functional: (tensor, peer, tag, group)
        kind = "send" if name == "isend" else "recv"
        return Op(kind, f"{name} (functional)", args[1], numel, dtype, tag=args[2])
    if name == "batch_p2p_ops":                   # functional: (ops, peers, tags, tensors, group)
        return [Op("send" if kind == "isend" else "recv", f"{kind} (functional)", peer, t.numel(),
                   str(t.dtype).removeprefix("torch."), tag=tag)
                for kind, peer, tag, t in zip(args[0], args[1], args[2], args[3])]
    if name in SYNC_ONLY:
        return Op("sync", PUBLIC_NAMES.get(name, name), None, 0, "")
    sent = _tensors(args[1]) if name in _INPUT_SECOND and len(args) > 1 else tensors
    numel = sum(t.numel() for t in sent)
    dtype = str(sent[0].dtype).removeprefix("torch.") if sent else dtype
    return Op("collective", PUBLIC_NAMES.get(name, name), None, numel, dtype)


# Collectives whose first argument is the output: the data this rank sends is the second.
_INPUT_SECOND = {"allgather_", "_allgather_base_", "allgather_coalesced_",
                 "allgather_into_tensor_coalesced_", "reduce_scatter_", "_reduce_scatter_base_",
                 "reduce_scatter_tensor_coalesced_", "gather_", "scatter_", "alltoall_",
                 "alltoall_base_"}


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
            return func(*args, **(kwargs or {}))
        announced = _announce(func, args) if _LISTENERS else []
        try:
            out = func(*args, **(kwargs or {}))
        except Exception as error:
            _raised(announced, error)
            raise
        found = _classify(func._opname, args)
        if found is None:
            return out
        where, api = caller()
        borrowed = callers.borrowed()
        # While graded: no course wrapper saw this call, so the record puts it on the trace.
        untraced = bool(_ACTIVE) and not tracing.TRACER._depth()
        for op in found if isinstance(found, list) else [found]:
            op.where, op.api, op.borrowed = where, api, borrowed
            for ops in _ACTIVE:
                op.seq = len(ops)
                ops.append(op)
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


def overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two tensors use some of the same bytes? (Views of one buffer side by side do not.)"""
    if not (a.numel() and b.numel()) or \
            a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def span(t):
        first = t.storage_offset() * t.element_size()
        last = first + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) * t.element_size()
        return first, last + t.element_size()
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _used_in_flight(func, args, kwargs):
    """A computation that reads (or writes) a receive's buffer before its wait: the data may
    not be there yet, and on gloo it usually is, so only the record can tell."""
    if not _WORKS or _CHECKING or func.is_view or func._opname in _NO_DATA:
        return
    name = func._opname
    flights = [flight for _, flight in list(_WORKS.values())
               if flight.buffers and not flight.op.changed_in_flight]
    if not flights:
        return
    used = _tensors(list(args) + list((kwargs or {}).values()))
    for flight in flights:
        if any(overlap(t, b) for t in used for b in flight.buffers):
            flight.op.changed_in_flight = (f"its receive buffer was used ({name}) before the "
                                           f"receive was waited")


def _trace(op, blocking):
    """Put an op no course wrapper saw (the process group's own methods, a functional
    collective) on the timeline too, outside any batch: the graders' checks of the trace
    (one batch, point-to-point only, overlap) see every door, not only dist.*."""
    name = op.name
    if op.kind in ("send", "recv"):
        name = ("" if blocking else "i") + op.kind
    event = tracing.TRACER._new(name, peer=op.peer, tag=op.tag, blocking=blocking)
    event.numel, event.dtype = op.numel, op.dtype
    if blocking:
        event.t_done = time.perf_counter()
    return event


def _trace_wait(event, waited):
    if waited:
        wait = tracing.TRACER._new("wait", blocking=True, label=event.describe())
        wait.peer, wait.tag, wait.numel, wait.dtype = (event.peer, event.tag, event.numel,
                                                       event.dtype)
        wait.waits_for, wait.t_done = event.seq, time.perf_counter()
    if event.t_done is None:
        event.t_done = time.perf_counter()


def _watch(work, op, args, event=None):
    op.work_id = id(work)
    flight = _InFlight(op, event=event)
    tensors = _tensors(args[0])
    if op.kind == "send":           # in __torch_dispatch__: the record's own clones pass by
        flight.sent = [(t, t.detach().clone()) for t in tensors]
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
        _check_buffers(entry[1], waited)
    finally:
        _CHECKING.pop()


def _check_buffers(flight, waited):
    flight.op.waited = True
    if flight.op.waited_at is None:
        flight.op.waited_at = len(_ACTIVE[-1]) if _ACTIVE else None
    if flight.event is not None:       # an op the record put on the timeline: its wait too
        _trace_wait(flight.event, waited)
    for tensor, before in flight.sent:
        if not torch.equal(tensor.detach(), before):
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
    try:
        result = _original_wait(self, *args, **kwargs)
    except Exception as error:
        if op is not None:
            _notify("wait_failed", op, error=f"{type(error).__name__}: {error}")
        raise
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
    """Patch Work.wait, Work.is_completed, Thread.start and _thread.start_new_thread
    (idempotent). Free until a record is open."""
    c10d_C.Work.wait = _wait
    c10d_C.Work.is_completed = _is_completed
    threading.Thread.start = _start
    _thread.start_new_thread = _start_new_thread


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
