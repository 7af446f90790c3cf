"""The second call: a body must not carry anything from one call to the next.

`GradedBody` (graded.py) calls the body again after a call (`_probes` says after which),
beside the reference, on other values (`_again`), and checks:
  * the first call's results are still what they were (not a buffer the next call reuses);
  * what the second call sent and returned follows its new inputs (`_contents_again`,
    `_stale`: not a result kept from the first call);
  * the second call's results (and gradients) die with the caller's references (`_kept`:
    not a buffer, or list, the body holds on to for a later call to overwrite).
"""
from __future__ import annotations

import gc
import time
import weakref

import torch
import torch.distributed as dist

from labs.harness.ranks import tracing
from labs.harness.grading.buffers import same_bytes
from labs.harness.grading.channels import SideChannel, closed_roads
from labs.harness.grading.checks import compared_in
from labs.harness.grading.compare import contents_problems
from labs.harness.grading.record import outstanding, record
from labs.harness.grading.state import _modules, _parameters, copy_args, tensors, written


class CalledAgain:
    """The part of `GradedBody` that calls the body a second time (a mixin: it reads the
    body, its reference and its method from the GradedBody it is part of)."""

    def _again(self, args, kwargs):
        """The second call's arguments. Values change on even ranks only: a body that skips
        the work when its own input repeats is wrong as soon as another rank's changed. Odd
        ranks pass the very same objects where the call only reads them (a memo keyed on
        the object is found out too), copies where it writes."""
        if dist.get_rank() % 2 == 0:
            return copy_args((args, kwargs), shift=1)
        return (tuple(copy_args(a) if i in self.method.writes else a
                      for i, a in enumerate(args)), dict(kwargs))

    def _probes(self, args) -> bool:
        """Call the body again after this call? Every call that returns new tensors (a
        buffer kept for some cases only shows in those cases); otherwise the first call of a
        launch, and one of at least 1 MiB larger than any probed (a cache kept for large
        tensors only shows on them). Every rank decides alike: from the arguments whose
        sizes all share (Method.probe_sizes), else a rank would call the body alone."""
        shared = [args[i] for i in self.method.probe_sizes] if self.method.probe_sizes else args
        size = sum(t.nbytes for t in tensors(shared))
        first_or_larger = self._probed < 0 or (size >= 1 << 20 and size > self._probed)
        if first_or_larger:
            self._probed = max(self._probed, size)
        if self.method.returns_requests:    # what it returns: kept by the body after?
            return first_or_larger
        if self.method.returns == "nothing":     # what it wrote may be a buffer it keeps
            return bool(self.method.writes) and first_or_larger
        return self.method.returns in ("fresh", "any") or first_or_larger

    def _call_again(self, kept, box, first_reference=None) -> list[str]:
        """Call the body again (every rank does; `_again` says on what), beside the
        reference, and check that the first result is still what it was, that what was sent
        and returned follows the new inputs (`_contents_again`, `_stale`), and that the second
        call's results (and gradients) die with the caller's references: not a buffer (or
        list) the body keeps and reuses, whether the next call or a later one overwrites it."""
        requests = self.method.returns_requests     # the first call's are still in flight
        with torch._C.DisableTorchFunctionSubclass():
            values = [] if requests else [t.detach().clone() for t in written(kept)]
        args, kwargs = box.pop()
        # What travels must not depend on earlier calls either (a difference from the last
        # message sent is the data only the first time): the reference runs on these too.
        expected = self._reference_ops(args, kwargs) if not requests else (None, True)
        start = len(tracing.TRACER.events)
        try:
            with record() as ops, closed_roads() as roads:
                try:
                    second = self.body(*args, **kwargs)
                    if requests:
                        _wait_all(second)
                except SideChannel:      # said below, as in the first call
                    second = None
        finally:
            del tracing.TRACER.events[start:]
        if roads:
            return [f"rank {dist.get_rank()} {road}" for road in roads]
        if expected[0] is not None and not expected[1]:   # the reference accepted these inputs
            sent = self._contents_again(ops, expected[0]) if self.method.contents else []
            sent = sent or self._stale(values, second, args, first_reference)
            if sent:
                return sent
        box = [(second, args, kwargs)]       # _kept holds the only references: it drops them
        del second, args, kwargs
        return self._kept(kept, values, box, ops)

    def _sums_if_right(self, result, args, kwargs, refused, first_reference) -> list[str]:
        """The sums probe's problems (graded.py), for a call that returned the right values:
        every rank probes (it communicates), a wrong result is the value check's to say."""
        problems = self._sums_probe(args, kwargs, refused)
        return problems if self._right_first(result, args, first_reference) else []

    def _right_first(self, result, args, first_reference) -> bool:
        """The call returned (and wrote) the reference's values, within rounding. Else the
        probes that follow (the sums probe, on inputs of its own) have nothing to add: the
        grader's check of the values names the fault, on the reader's own input."""
        if first_reference is None or not self.method.sums:   # no probe, or no reference
            return True
        with torch._C.DisableTorchFunctionSubclass():
            mine = written((result, [a for i, a in enumerate(args) if i in self.method.writes]))
            return len(mine) == len(first_reference) and all(
                _near(a.detach(), b) for a, b in zip(mine, first_reference))

    def _stale(self, values, second, args, first_reference) -> list[str]:
        """The reference's results changed between the two calls (another rank's input
        did), the body's did not: it kept them from the first call."""
        with torch._C.DisableTorchFunctionSubclass():
            now = [t.detach().clone() for t in written((second, [a for i, a in enumerate(args)
                                                                  if i in self.method.writes]))]
        then, reference = first_reference or [], self._reference_out
        if not (len(values) == len(now) == len(then) == len(reference)):
            return []
        if not any(not same_bytes(r1, r2) and same_bytes(b1, b2)
                   for b1, b2, r1, r2 in zip(values, now, then, reference)):
            return []
        # A first result already wrong says nothing of kept state: a body that leaves out
        # some rank's data returns the same values when only that data changed. Its values
        # are the fault, the grader's to say: its check of every case groups the failing
        # ones by their shared cause and names the body's line (evidence.py).
        if not all(_near(b1, r1) for b1, r1 in zip(values, then)):
            return []
        return [f"rank {dist.get_rank()} returned (or wrote) the same values when "
                f"{self.__name__} was called again, although another rank's input had "
                f"changed: compute each call's result from what arrives, do not keep it "
                f"from an earlier call"]

    def _contents_again(self, ops, expected) -> list[str]:
        sent = contents_problems(ops, expected, self.method, rank=dist.get_rank(),
                                 world_size=dist.get_world_size())
        return [sent[0] + f" (when {self.__name__} was called again, on other values)"] \
            if sent else []

    def _kept(self, kept, values, box, ops) -> list[str]:
        """The first call's results unchanged, the second's not held by the body."""
        requests = self.method.returns_requests
        second, args, kwargs = box.pop()
        reused = (f"rank {dist.get_rank()} changed what an earlier call returned (or wrote) "
                  f"when {self.__name__} was called again: results and gradients are new "
                  f"tensors each call, not a buffer (or list) you keep and reuse")
        with torch._C.DisableTorchFunctionSubclass():
            now = [] if requests else written(kept)
            if len(now) != len(values) or not all(same_bytes(a.detach(), b)
                                                  for a, b in zip(now, values)):
                return [reused]
            if outstanding(ops):       # the first call's checks say so; its buffers live on
                return []
            storages = self._storages(second, [args, list(kwargs.values())])
        del second, args, kwargs
        if _alive(storages):
            return [f"rank {dist.get_rank()} kept a reference to what {self.__name__} returned "
                    f"(or wrote), so a later call can overwrite it: results and gradients are "
                    f"new tensors each call, not a buffer (or list) you keep and reuse"]
        return []

    def _storages(self, result, args) -> list:
        """Weak references to the memory of what a call returned (new tensors) and of the
        gradients it wrote. The modules' gradients are then set to None: keeping a model
        is fine, keeping its gradients' memory is not."""
        mine = tensors(_flat(result)) if self.method.returns in ("fresh", "any") else []
        mine += [p.grad for p in _parameters(args) if p.grad is not None]
        storages = [weakref.ref(t.untyped_storage()) for t in mine]
        for module in _modules(args):
            module.zero_grad(set_to_none=True)
        return storages


def _close(got, expected):
    """Elementwise: `got` is `expected` within the rounding a method may add (exactly, for
    integers): for floats, 2 * world size roundings of the dtype, relative to the largest
    value (sums in any order may cancel). None: another shape or dtype."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return None
    if not (expected.is_floating_point() or expected.is_complex()):
        return got.detach().reshape(-1) == expected.detach().reshape(-1)
    wide = compared_in(expected.dtype)          # float32 for float32 and narrower
    g, e = (t.detach().reshape(-1).to(wide) for t in (got, expected))
    tol = max(1e-5, 2 * dist.get_world_size() * torch.finfo(expected.dtype).eps)
    magnitude = e.abs().nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)
    scale = float(magnitude.max()) if magnitude.numel() else 0.0
    return torch.isclose(g, e, rtol=tol, atol=tol * scale, equal_nan=True)


def _near(got, expected) -> bool:
    if got.shape == expected.shape and got.dtype == expected.dtype and \
            same_bytes(got, expected):      # the same bits: no rounding to allow for
        return True
    close = _close(got, expected)
    return close is not None and bool(close.all())


def _wait_all(result) -> None:
    for work in _flat(result):
        if hasattr(work, "wait"):
            work.wait()


def _alive(storages) -> list:
    """The storages still alive once nothing of the grader's holds them. A Work's thread
    may let go of its buffers a moment after wait() returns: look again, briefly."""
    for _ in range(20):
        left = [ref for ref in storages if ref() is not None]
        if not left:
            return []
        gc.collect()
        time.sleep(0.01)
    return left


def _flat(x) -> list:
    if isinstance(x, dict):
        return _flat(list(x.values()))
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flat(item)]
    return [x]
