"""The worker side of a grader: this rank's inputs, and a record of one call of the exercise."""
from __future__ import annotations

import contextlib
import inspect
import time
from dataclasses import dataclass, field

import torch

from labs.harness.grading.buffers import same_bytes
from labs.harness.grading.channels import by_the_machinery
from labs.harness.ranks import tracing
from labs.harness.grading.run import GradeFailure
from labs.harness.ranks.tracing import Event

WATCHED_LABEL = "matmul seen by the grader"


class Watched(torch.Tensor):
    """A tensor whose uses show on the trace as compute spans (label WATCHED_LABEL), so a
    grader sees when the exercise computed with it, however it wrote the product: any torch
    function that combines this tensor (or a view, a copy, a result of it) with a tensor
    that is not watched (the block) is a span (`@`, mm, einsum, linear, a broadcast
    multiply, column or row blocks, split-K partial products, ...); joining partial
    products (cat, +), calls that only look at the other tensor's shape or dtype
    (`type_as`, `to`, `view_as`, ...) and calls that return no tensor (`result_type`,
    `equal`) are not. The tensor stays watched through views, copies (into a plain tensor
    too: copy_, out=) and `as_subclass`; taking its values out of torch (numpy, tolist, item,
    float(), its storage or address) is refused: the grader could not see the product.
    Printed, it shows its shape and dtype only (a repr parsed back is a way out too)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _ESCAPES and not by_the_machinery():   # the harness's own checks may
            raise GradeFailure(f"the weight left torch ({getattr(func, '__name__', func)}): the "
                               f"grader sees when the product is computed only when torch "
                               f"computes it; write block @ weight with torch")
        if func in _PRINTS and not by_the_machinery():    # text is a way out too
            return f"<the grader's weight (or what came of it): {tuple(args[0].shape)}, " \
                   f"{args[0].dtype}; its values are not printed while graded>"
        if func is torch.Tensor.as_subclass:          # stays watched
            return super().__torch_function__(func, types, (args[0], cls), {})
        tensors = _all_tensors((args, kwargs))
        dest = _written_plain(func, args, kwargs)
        if dest is not None and all(isinstance(t, Watched) for t in tensors if t is not dest):
            # The weight's values copied into a plain tensor (buf.copy_(weight), out=): no
            # arithmetic with the block yet, and the copy is watched from now on.
            out = super().__torch_function__(func, types, args, kwargs)
            dest.__class__ = cls
            return out
        # The weight (or what came of it: a view, a copy, a partial product) with another
        # tensor: arithmetic with the block. Joining partial products (cat, +) is not a span.
        if func in _SHAPE_ONLY or all(isinstance(t, Watched) for t in tensors) or \
                not any(isinstance(t, Watched) for t in tensors):
            return super().__torch_function__(func, types, args, kwargs)
        event = tracing.TRACER._new("compute", label=WATCHED_LABEL)
        out = super().__torch_function__(func, types, args, kwargs)
        if _all_tensors(out):
            event.t_done = time.perf_counter()
        elif tracing.TRACER.events and tracing.TRACER.events[-1] is event:
            tracing.TRACER.events.pop()       # a dtype, a bool, a shape: nothing computed
        return out


_ESCAPES = {torch.Tensor.numpy, torch.Tensor.tolist, torch.Tensor.__array__,
            torch.Tensor.__dlpack__, torch.Tensor.untyped_storage, torch.Tensor.storage,
            torch.Tensor._typed_storage, torch.Tensor.data_ptr,
            # one value at a time, as a Python number (a bool reads one bit: not refused)
            torch.Tensor.item, torch.Tensor.__float__, torch.Tensor.__int__,
            torch.Tensor.__index__, torch.Tensor.__complex__}
_PRINTS = {torch.Tensor.__repr__, torch.Tensor.__str__, torch.Tensor.__format__}
# Calls that read another tensor's shape, dtype or device only: no arithmetic with the weight.
_SHAPE_ONLY = {torch.Tensor.to, torch.Tensor.type_as, torch.Tensor.view_as,
               torch.Tensor.reshape_as, torch.Tensor.expand_as, torch.Tensor.is_same_size,
               torch.Tensor.new_empty, torch.Tensor.new_zeros, torch.Tensor.new_ones,
               torch.Tensor.new_full, torch.Tensor.new_tensor, torch.empty_like,
               torch.zeros_like, torch.ones_like, torch.full_like, torch.Tensor.__eq__,
               torch.Tensor.__ne__, torch.Tensor.__hash__}


def _written_plain(func, args, kwargs):
    """The plain tensor (not watched, not a Parameter) a call writes: `out=`, or the self of
    an in-place method (copy_, add_, ...); None if there is none."""
    dest = kwargs.get("out")
    name = getattr(func, "__name__", "")
    if dest is None and args and name.endswith("_") and not name.endswith("__"):
        dest = args[0]
    return dest if type(dest) is torch.Tensor else None


def _all_tensors(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _all_tensors(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in _all_tensors(item)]
    return []


def watched(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.as_subclass(Watched)


@dataclass
class Call:
    """What one call of an exercise did on one rank: made in the worker by `call`, checked
    in the test. Tensors in `result` are copies taken when the call returned."""

    result: object                                     # what it returned
    changed: list[int] = field(default_factory=list)   # tensor arguments it wrote to (positions)
    names: list[str] = field(default_factory=list)     # the arguments' names, for messages
    aliased: bool = False          # the result shares memory with a tensor argument
    returned_first: bool = False   # the result is the first argument itself
    replaced: dict = field(default_factory=dict)   # list argument position -> entries it replaced
    events: list[Event] = field(default_factory=list)  # its torch.distributed calls


@contextlib.contextmanager
def recording():
    """`with recording() as events:` -- the torch.distributed calls made in the block."""
    events: list[Event] = []
    start = len(tracing.TRACER.events)
    try:
        yield events
    finally:
        events.extend(tracing.TRACER.events[start:])


@contextlib.contextmanager
def in_case(case: str):
    """`with in_case("float32, shape (5,)"):` -- a hang or a crash in the block names the
    case (the rank's status note). Left set if the block raises, for the failure report."""
    tracing.TRACER.note = f"case {case}" if case else ""
    yield
    tracing.TRACER.note = ""


def call(fn, *args, must_complete=False, case="", **kwargs) -> Call:
    """Call `fn(*args, **kwargs)` once, as a grader case; return what it did.

    must_complete: the call may not return with a non-blocking op still in flight (one it
    never waited for); raised here, in the worker, before the next case can trip on it.
    case: what this case is ("float32, shape (5,)"): a hang or a crash inside it names it.
    """
    kept = [_copy(a) for a in args]
    entries = [list(a) if isinstance(a, list) else None for a in args]
    with in_case(case), recording() as events:
        result = fn(*args, **kwargs)
    in_flight = [e.describe() for e in events if e.t_done is None and not e.blocking]
    if must_complete and in_flight:
        raise GradeFailure(f"{fn.__name__}{f' ({case})' if case else ''} returned with "
                           f"{len(in_flight)} op(s) still in flight ({'; '.join(in_flight)}): "
                           f"wait() for every Work before returning")
    inputs = [t for a in args for t in _tensors(a)]
    return Call(result=_copy(result),
                changed=[i for i, (a, k) in enumerate(zip(args, kept))
                         if _tensors(k) and not _same_values(a, k)],
                names=_parameter_names(fn, len(args)),
                aliased=any(_shares_memory(t, a) for t in _tensors(result) for a in inputs),
                returned_first=bool(args) and result is args[0],
                replaced={i: [j for j, (was, now) in enumerate(zip(before, args[i]))
                              if was is not now] + list(range(len(before), len(args[i])))
                          for i, before in enumerate(entries) if before is not None},
                events=events)


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for t in x if isinstance(t, torch.Tensor)]
    return []


def _copy(x):
    """Tensors (alone or in a list or tuple) cloned, as plain tensors; anything else as is."""
    if isinstance(x, torch.Tensor):
        return x.detach().clone().as_subclass(torch.Tensor)
    if isinstance(x, (list, tuple)) and _tensors(x):
        return type(x)(_copy(t) for t in x)
    return x


def _same_values(now, before) -> bool:
    now, before = _tensors(now), _tensors(before)
    return len(now) == len(before) and all(same_bytes(a, b) for a, b in zip(now, before))


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(a.numel() and b.numel()) and \
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _parameter_names(fn, n) -> list[str]:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"argument {i}" for i in range(n)]
