"""An exercise body under grading: the properties every exercise must have, checked on
every call, in the worker, by one piece of code rather than by each grader.

`implementation()` hands a grader a `GradedBody`. Each call of it:
  1. runs the reference solution on copies of the same arguments (the same launch, so
     every rank does), recording its communication;
  2. runs the body under test on the arguments, recording its communication;
  3. raises GradeFailure, on this rank, if
       * it moved data outside the process group (channels: a store, a file, a socket);
       * it communicated differently from the reference (compare.differences);
       * it communicated through the course's own code instead of its own: the reference,
         the lessons' demonstrations, lesson 10's engine (`_not_yours`);
       * it returned with a request nobody waited for, or wrote a buffer in flight;
       * it sent other partial sums than the reference (a reduction, on a probe: sums.py);
       * it waited a request later than the reference does, against the posts that follow
         (order.py: a step's sends waited only at the end; a pipeline a step at a time);
       * it wrote an argument the contract does not let it write;
       * its result shares memory with an argument (where the contract wants new tensors);
       * a result it returned earlier has changed, or one it returned is still held by the
         body once the caller lets go of it (a buffer it keeps and reuses, however many):
         the second call, again.py.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from dataclasses import replace

import torch
import torch.distributed as dist

from labs.harness import COURSE_ROOT
from labs.harness.ranks import tracing
from labs.harness.ranks.exercises import untouched
from labs.harness.grading import lessons, reference_cache
from labs.harness.grading.again import CalledAgain, _flat
from labs.harness.grading.channels import SideChannel, closed_roads
from labs.harness.grading.buffers import DIGESTS, DISTINCT, Noting, overlap, read_only
from labs.harness.grading.compare import (Method, differences, forbidden_collectives,
                                           moved_before_refusing,
                                           relay_problems)
from labs.harness.grading.methods import METHODS
from labs.harness.grading.order import order_problems
from labs.harness.grading.private import private_names
from labs.harness.grading.peers import refuse_non_ranks
from labs.harness.grading.record import forbidding, install, listen, outstanding, record
from labs.harness.grading.run import GradeFailure
from labs.harness.grading.sums import pieces, probe_args, shuffled_problems, sums_problems
from labs.harness.grading.state import (_parameters, copy_args, grads_problems,
                                         memory_problems, places, shares_memory, snapshot,
                                         state, state_problems, tensors, unchanged, written)


@contextlib.contextmanager
def _raising():
    """`with _raising() as raised:` the ops that raised in the block (a record keeps only
    those that ran)."""
    raised: list = []
    with listen(lambda event, op, **_: raised.append(op) if event == "raised" else None):
        yield raised


def implementation(impl: str, module: str, name: str):
    """The body under test, looked up in the worker, as a `GradedBody` when the exercise
    has a method (labs.harness.grading.methods).

    impl "labs": `labs.<module>.<name>` as you wrote it (the stub's own body, never the
    solution); "solutions": `solutions.<module>.<name>`. The graders' own tests grade known
    right and wrong bodies with any other impl: "package.module" (its `<name>`) or
    "package.module:attribute".
    """
    install()          # before the body's module is imported: threads it starts are seen
    if impl not in ("labs", "solutions"):
        path, _, attribute = impl.partition(":")
        body = getattr(importlib.import_module(path), attribute or name)
    else:
        fn = getattr(importlib.import_module(f"{impl}.{module}"), name)
        body = getattr(fn, "stub", fn) if impl == "labs" else fn
    method = METHODS.get(f"{module}.{name}")
    if method is None or (impl == "labs" and untouched(body)):
        return body            # a stub you have not touched raises ExerciseNotSolved at once
    reference = getattr(importlib.import_module(f"solutions.{module}"), name)
    borrowing = ((), ()) if body is reference else _not_yours(impl, reference)
    return GradedBody(name, body, reference, method, borrowing)


def _under(*parts: str) -> str:
    """The prefix of every path inside the course folder `parts`."""
    return str(COURSE_ROOT.joinpath(*parts)) + os.sep


# The course's own implementations of the lessons' methods (lesson 10's engine, the views,
# benchmarks, claims and scripts): a body that sends through them did not write the method.
ENGINE = (str(COURSE_ROOT / "labs" / "plans.py"), _under("labs", "views"),
          _under("labs", "bench"), _under("labs", "claims"), _under("labs", "scripts"))


def _not_yours(impl: str, reference):
    """(code objects, path prefixes) a body may not communicate through: the reference
    and its file, the lessons' own demonstrations (labs.harness.grading.lessons), the
    engine, and for your labs/ all of solutions/ and tests/ (but the graders themselves,
    tests/graders/test_*.py, which may wrap what a body calls to count it)."""
    prefixes = [*ENGINE, os.path.abspath(inspect.getsourcefile(reference))]
    if impl == "labs":
        prefixes += [_under("solutions"), _under("tests", "graders", "bodies")]
        prefixes += [_under("tests", p.name) if p.is_dir() else str(p)
                     for p in sorted((COURSE_ROOT / "tests").iterdir()) if p.name != "graders"]
    return [inspect.unwrap(reference).__code__, *lessons.codes()], prefixes


class GradedBody(CalledAgain):
    """`name`'s body under test, with its reference and its declared `Method`."""

    def __init__(self, name: str, body, reference, method: Method, borrowing=((), ())):
        self.name, self.body, self.reference, self.method = name, body, reference, method
        self.borrowing = borrowing       # (codes, prefixes) the body may not send through
        self.__name__ = getattr(body, "__name__", name)
        self.__wrapped__ = body          # inspect.signature sees the body's parameters
        self._earlier: list = []         # (result, its values when returned) of earlier calls
        self._probed = -1                # bytes of the largest call probed (-1: none yet)
        self._reference_drew = False     # the reference's last call drew random numbers
        self._reference_out = None       # what the reference's last call returned (or wrote)
        self._private = None             # private names its code uses (private.py), once

    def __call__(self, *args, **kwargs):
        if not dist.is_initialized():
            return self.body(*args, **kwargs)
        if self._private is None:
            self._private = private_names(self.body)
        self._raise_if(self._private)
        DIGESTS.append(self.method.contents or self.method.relays)   # hash each send, if compared
        try:
            with listen(refuse_non_ranks):      # a peer -1 or p: said at once, not a hang
                return self._graded(args, kwargs)
        finally:
            DIGESTS.pop()

    def _graded(self, args, kwargs):
        again = self._again(args, kwargs) if self._probes(args) else None
        expected, refused = self._reference_ops(args, kwargs)
        first_reference = self._reference_out      # what the reference returned (or wrote)
        with torch._C.DisableTorchFunctionSubclass():
            before = [snapshot(a) for a in args]
            where, found = [places(a) for a in args], state(args)
        with record() as ops, closed_roads() as roads, read_only(self._lent(args)) as lent, \
                forbidding(*self.borrowing, below=sys._getframe()), _raising() as raised:
            try:
                result = self.body(*args, **kwargs)
            except Exception as exc:
                self._raised(exc, roads, ops, raised, expected, refused)
                raise
        self.last_ops = ops      # the body's record of this call: where a wrong value came in
        # The reference refused what the body accepted: any route will do, no collective.
        method = replace(self.method, compare="refused") if refused else self.method
        # The checks compare tensors: not through a Watched tensor's tracing (not compute).
        with torch._C.DisableTorchFunctionSubclass():
            problems = [f"rank {dist.get_rank()} {road}" for road in roads]
            names = _parameter_names(self.body, len(args))
            problems += memory_problems(args, where, before, method, names)
            problems += grads_problems(args, method.writes, names, overlap)
            problems += state_problems(found, state(args), self._reference_drew,
                                       dist.get_rank())
            problems += self._problems(ops, ops if expected is None else expected, args,
                                       before, result, method)
            problems += _written_lent(lent)
        if again is not None and not problems:
            box, again = [again], None      # _call_again holds the only reference: it drops it
            problems = self._call_again((result, [a for i, a in enumerate(args)
                                                  if i in self.method.writes]), box,
                                        first_reference)
        problems = problems or self._sums_if_right(result, args, kwargs, refused, first_reference)
        self._raise_if(problems)
        if not self.method.returns_requests:      # those results fill in after return
            with torch._C.DisableTorchFunctionSubclass():
                self._earlier.append((result, snapshot(result)))
        return result

    def _raised(self, exc, roads, ops, raised, expected, refused) -> None:
        """The body raised: the record first. A road it may not use, a collective the lesson
        forbids (also one that raised: gloo's own check is not the learner's bug), or more
        data moved before refusing than the reference's, is the message."""
        self._raise_if([f"rank {dist.get_rank()} {road}" for road in roads])
        self._raise_if(forbidden_collectives(ops + raised, expected, self.method,
                                             rank=dist.get_rank(),
                                             world_size=dist.get_world_size()))
        if refused:        # both refuse: no more data may move than the reference's
            self._raise_if(moved_before_refusing(ops, expected, exc))

    def _lent(self, args) -> list:
        """[(name, tensor)] the body may read and not write: the arguments the contract
        does not let it write, and every module's parameters (a module's .grad it may)."""
        names = _parameter_names(self.body, len(args))
        return [(f"`{names[i]}`" + ("'s parameters" if isinstance(a, torch.nn.Module) else ""), t)
                for i, a in enumerate(args)
                for t in (tensors(a) if i not in self.method.writes else
                          [p.data for p in _parameters(a)])]

    @staticmethod
    def _raise_if(problems):
        if problems:       # the case is in the rank's status note: grade() names it
            raise GradeFailure("\n".join(dict.fromkeys(problems)))   # each once, one a line

    def _sums_probe(self, args, kwargs, refused) -> list[str]:
        """The body again, beside the reference, on the probes of labs.harness.grading.sums:
        the positional one where the dtype allows (the same partial sums to every
        peer, each message in the tensor's order), else every rank's tensor 2**rank
        everywhere (the same sums). A mean (divided before it adds) does not decode: there
        the positional probe checks the order only, the plain one the sums. Not where the
        method moves no sums or the reference refused the first call."""
        if not self.method.sums or refused or self.body is self.reference:
            return []
        world_size, rank = dist.get_world_size(), dist.get_rank()
        positional = probe_args(args, world_size, rank, positional=True)
        plain = probe_args(args, world_size, rank) \
            if positional is None or self.method.sums == "mean" else None
        starts, loose = pieces(args, world_size)
        for probe, noting in ((positional, Noting(world_size, starts)), (plain, Noting())):
            problems = self._probe_once(probe, kwargs, noting, loose) if probe else []
            if problems:
                return problems
        return []

    def _probe_once(self, probe, kwargs, noting, allowed) -> list[str]:
        DISTINCT.append(noting)       # the record notes the values each send holds
        start = len(tracing.TRACER.events)
        try:
            expected, refused = self._reference_ops(probe, kwargs, keep_out=False)
            with record() as ops, closed_roads() as roads, \
                    forbidding(*self.borrowing, below=sys._getframe()):
                try:
                    self.body(*probe, **kwargs)
                except SideChannel:      # said below, as in the first call
                    pass
        finally:
            DISTINCT.pop()
            del tracing.TRACER.events[start:]
        if roads:
            return [f"rank {dist.get_rank()} {road}" for road in roads]
        if refused:
            return []
        order = shuffled_problems(ops, expected, allowed) if noting.positions else []
        if order or (noting.positions and self.method.sums == "mean"):
            return order
        return sums_problems(ops, expected, self.method, bool(noting.positions))

    def _reference_ops(self, args, kwargs, keep_out=True):
        """(the reference's record on copies of the arguments, whether it raised): None if
        the body IS the reference. Kept on disk once run (reference_cache: the same
        arguments on every rank, the same reference and harness: the same record), so an
        edit runs only the body. keep_out: what it returned is read later (not a probe)."""
        if self.body is self.reference:
            return None, False
        entry = reference_cache.reference_run(self.reference.__module__, self.name, args,
                                              kwargs, self._reference_live, keep_out)
        self._reference_out, self._reference_drew = entry.out if keep_out else None, entry.drew
        return entry.ops, entry.refused

    def _reference_live(self, args, kwargs) -> reference_cache.Entry:
        """The reference run now. Its timeline events are dropped, and its batches not
        counted: the trace shows the body's calls, the same whether the reference ran or was
        kept. A contract that raises (checked_exchange on a mismatch, a ring given a tensor
        it refuses) keeps what the reference did before raising."""
        copies = copy_args((args, kwargs))
        start, batches = len(tracing.TRACER.events), tracing.TRACER._batches
        refused, generator, out = False, torch.get_rng_state(), None
        with record() as ops:
            try:
                result = self.reference(*copies[0], **copies[1])
                with torch._C.DisableTorchFunctionSubclass():
                    out = [t.detach().clone() for t in written(
                        (result, [a for i, a in enumerate(copies[0]) if i in self.method.writes]))]
            except Exception:  # noqa: BLE001 - the body must refuse too, or move no less
                refused = True
            finally:
                del tracing.TRACER.events[start:]
                tracing.TRACER._batches = batches
        drew = not torch.equal(generator, torch.get_rng_state())
        return reference_cache.Entry(ops, refused, out, drew)

    def _problems(self, ops, expected, args, before, result, method) -> list[str]:
        rank, world_size = dist.get_rank(), dist.get_world_size()
        borrowed = next((op for op in ops if op.borrowed), None)
        if borrowed is not None:     # the cause of every other difference: said alone
            return [f"rank {rank} communicated through {borrowed.borrowed}, the course's own "
                    f"code ({borrowed.describe()}): the grade is for the method you write, not "
                    f"for calling the reference or the course's implementation"]
        problems = [f"rank {rank} returned with {op.describe()} never waited for: wait() "
                    f"for every request before returning (a batch returns one per op)"
                    for op in ([] if method.returns_requests else outstanding(ops))]
        if method.returns_requests:
            problems += _request_problems(ops, result, rank, self.name)
        problems += [f"rank {rank} received into the memory of its argument {op.into} "
                     f"({op.describe()}); the contract lets it only read {op.into}: receive "
                     f"into a tensor of your own" for op in ops if op.into]
        problems += [f"rank {rank} posted {op.describe()} while its argument {op.lent_changed} "
                     f"held other values than it was given (written through .data, numpy or "
                     f"a view, even if put back later): the contract lets it only read "
                     f"{op.lent_changed}; work in a tensor of your own"
                     for op in ops if op.lent_changed]
        problems += [f"rank {rank} posted {op.describe()} and {op.changed_in_flight}: a "
                     f"buffer belongs to the transfer from post to wait"
                     for op in ops if op.changed_in_flight]
        problems += differences(ops, expected, method, rank=rank, world_size=world_size)
        if method.relays and method.compare != "refused":
            problems += relay_problems(ops, args[0], method, rank=rank, world_size=world_size)
        if expected is not ops and method.compare not in ("routing", "refused"):
            problems += order_problems(ops, expected, rank=rank, pipelined=method.pipelined)
        names = _parameter_names(self.body, len(args))
        problems += [f"rank {rank} changed its argument `{names[i]}`; the contract lets it "
                     f"only read it" for i, (a, b) in enumerate(zip(args, before))
                     if i not in method.writes and not unchanged(a, b)]
        # A module the contract writes has its gradients written, never its parameters.
        problems += [f"rank {rank} changed the parameters of `{names[i]}`; the contract "
                     f"replaces their .grad only" for i, (a, b) in enumerate(zip(args, before))
                     if i in method.writes and isinstance(a, torch.nn.Module)
                     and not unchanged(a, b)]
        problems += self._result_problems(result, args, rank)
        return problems

    def _result_problems(self, result, args, rank) -> list[str]:
        returns, problems = self.method.returns, []
        if returns == "input" and args and result is not args[0]:
            problems.append(f"rank {rank} must return its first argument itself (the contract "
                            f"is in place), got {type(result).__name__}")
        if returns == "nothing" and result is not None:
            problems.append(f"rank {rank} must return None, got {type(result).__name__}")
        if returns == "fresh":
            inputs, results = tensors(args), tensors(result)
            if any(shares_memory(r, a) for r in results for a in inputs):
                problems.append(f"rank {rank} returned a tensor that shares memory with an "
                                f"argument: return new tensors, the caller may change its "
                                f"own next")
            if any(overlap(a, b) for i, a in enumerate(results) for b in results[i + 1:]):
                problems.append(f"rank {rank} returned the same memory twice (one tensor, or "
                                f"overlapping views): each result is a tensor of its own, the "
                                f"caller may change one and not the other")
        for earlier, values in self._earlier:
            if earlier is not None and not unchanged(earlier, values):
                problems.append(f"rank {rank} changed what an earlier call returned when "
                                f"{self.__name__} was called again: return new tensors each "
                                f"call, not a buffer (or list) you keep and reuse")
                break
        return problems


def _written_lent(lent) -> list[str]:
    return [f"rank {dist.get_rank()} wrote into its argument {lent.written}, even if only for a "
            f"moment (through .data or a view): the contract lets it only read it; work in a "
            f"tensor of your own"] if lent.written else []


def _request_problems(ops, result, rank, name) -> list[str]:
    """An exercise that hands its requests to the caller: none waited inside, and the Work
    of every op still in flight among those it returns."""
    waited = [op for op in ops if op.kind in ("send", "recv") and op.returned_work
              and op.waited]          # a barrier waited inside moves no data: allowed
    if waited:
        return [f"rank {rank} waited for {waited[0].describe()} inside {name}; hand back "
                f"every request unwaited: the caller computes while they travel, then waits"]
    handed = {id(getattr(w, "_work", w)) for w in _flat(result)}
    kept = [op for op in outstanding(ops) if op.work_id not in handed]
    if kept:
        return [f"rank {rank} returned without the request of {kept[0].describe()}: hand "
                f"back every Work the batch returns, so that the caller waits for each"]
    return []


def _parameter_names(fn, n) -> list[str]:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"argument {i}" for i in range(n)]
