"""Lesson 11 (labs/jobs.py): the grader for ring_job, run the way a cluster runs it.

The test starts `torchrun --standalone --nproc-per-node=3 -m tests.graders.test_jobs IMPL DIR`:
this file is also the script every rank runs (`probe`). Each rank watches how ring_job
joins and leaves the process group (it wraps init_process_group and destroy_process_group),
which torch.distributed calls it makes (the course's tracer), what it prints and returns,
and what it does when its work raises; then writes that down for the test to check.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import sys
from pathlib import Path

import torch

from labs.harness.commands.cli import format_result
from labs.harness.ranks.exercises import SOLUTIONS_ENV, Unsolved, unsolved_of
from labs.harness.grading import (GradeFailure, check_close, check_p2p_only, implementation,
                                  p2p_ops)
from labs.harness.grading.record import record
from labs.harness.grading.run import unsolved_failure
from labs.harness.ranks.tracing import Event

WORLD_SIZE = 3          # odd: uneven ring chunks
NUMEL = 7               # not a multiple of WORLD_SIZE
TIMEOUT_S = 9.0         # nobody's default, so it proves timeout_s reaches init_process_group;
                        # short, so that a deadlocked ring is reported within seconds
# Any numel >= 0: also fewer elements than ranks. (Not 0: a body may then skip the ring and
# leave at once, while a slower rank still connects to it: "Connection refused".)
SMALL = (2,)
WHAT = f"ring_job({NUMEL}, timeout_s={TIMEOUT_S:g}) under torchrun with {WORLD_SIZE} ranks"


# -- the script every rank runs ----------------------------------------------------------

def probe(out_dir: str, *impls: str):
    """As torchrun's worker: call each implementation's ring_job normally (NUMEL, then the
    SMALL sizes) and with work that raises (numel -1: torch.arange raises once the group is
    joined); record."""
    from labs.harness.ranks import tracing

    rank, calls = int(os.environ["RANK"]), []
    real = _spy_on_joining(calls)
    tracer = tracing.install(rank)
    records, joins = {}, 0
    for impl in impls:
        ring_job, records[impl] = implementation(impl, "jobs", "ring_job"), []
        for numel in (NUMEL, *SMALL, -1):
            joins += 1
            records[impl].append(_one_case(ring_job, numel, joins, calls, tracer, real))
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(records))


def _spy_on_joining(calls: list) -> dict:
    """Record every init/destroy_process_group call (its arguments, what it raised) in
    `calls`; return the real functions."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    real = {name: getattr(c10d, name) for name in ("init_process_group", "destroy_process_group")}

    def spy(name):
        def recorded(*args, **kwargs):
            bound = inspect.signature(real[name]).bind(*args, **kwargs).arguments
            call = {"call": name, **{k: _plain(v) for k, v in bound.items()}}
            calls.append(call)
            try:
                return real[name](*args, **kwargs)
            except Exception as exc:
                call["raised"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                raise
        return recorded

    for name in real:
        setattr(dist, name, spy(name))
        setattr(c10d, name, getattr(dist, name))
    return real


def _one_case(ring_job, numel: int, joins: int, calls: list, tracer, real: dict) -> dict:
    """One call of ring_job(numel): what it returned or raised, printed, called, traced."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    # Joining again in one process: each group needs rendezvous keys of its own.
    c10d._world.group_count = 1000 * joins
    first_call, first_event, out = len(calls), len(tracer.events), io.StringIO()
    case = {"numel": numel, "initialized_before": dist.is_initialized()}
    try:
        # The record traces every door (the process group's own methods too).
        with contextlib.redirect_stdout(out), record():
            result = ring_job(numel, TIMEOUT_S)
        case["returned"] = (result.tolist() if isinstance(result, torch.Tensor)
                            else repr(result))
    except Exception as exc:  # noqa: BLE001 - the test judges it
        case["raised"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        if unsolved_of(exc) is not None:       # a stub: which one, as data
            case["unsolved"] = unsolved_of(exc).as_dict()
    case.update(printed=out.getvalue(), calls=calls[first_call:],
                initialized_after=dist.is_initialized(),
                events=[e.as_dict() for e in tracer.events[first_event:]])
    if dist.is_initialized():
        real["destroy_process_group"]()         # the case is over; not recorded
    return case


def _plain(value):
    if hasattr(value, "total_seconds"):
        return value.total_seconds()
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


# -- the test ----------------------------------------------------------------------------

def run_probe(out_dir: Path, *impls: str) -> dict[int, dict]:
    """Run `probe` under torchrun; {rank: {impl: cases}}, or a GradeFailure saying why not."""
    from labs.harness.commands.torchrun import run_torchrun
    run = run_torchrun(["--standalone", f"--nproc-per-node={WORLD_SIZE}",
                        "-m", "tests.graders.test_jobs", str(out_dir), *impls],
                       env={SOLUTIONS_ENV: "0"}, deadline_s=60 + 40 * len(impls))
    records = {int(p.stem[4:]): json.loads(p.read_text()) for p in out_dir.glob("rank*.json")}
    if sorted(records) != list(range(WORLD_SIZE)):
        tail = "\n".join(r.stderr[-1500:] for r in run.ranks if r.stderr.strip())
        raise GradeFailure(f"{WHAT}: the job did not finish on every rank (exit codes "
                           f"{run.returncodes}, ranks that reported: {sorted(records)}):\n{tail}")
    return records


def _raised(case: dict, rank: int, what: str = WHAT) -> GradeFailure:
    if "unsolved" in case:
        return unsolved_failure([Unsolved(**case["unsolved"])], "ring_job", meanwhile=(
            ", or sum with labs.ring.pass_along_all_reduce until then"))
    return GradeFailure(f"{what}: rank {rank} raised {case['raised']}")


def check_joined_and_left(case: dict, rank: int, what: str):
    inits = [c for c in case["calls"] if c["call"] == "init_process_group"]
    destroys = [c for c in case["calls"] if c["call"] == "destroy_process_group"]
    if len(inits) != 1:
        raise GradeFailure(f"{what}: rank {rank} called init_process_group {len(inits)} times; "
                           f"join the group once, at the start of the job")
    init = inits[0]
    if init.get("init_method") not in (None, "env://") or init.get("store") is not None:
        raise GradeFailure(f"{what}: rank {rank} joined with init_method="
                           f"{init.get('init_method')!r}; use env://: torchrun's MASTER_ADDR, "
                           f"MASTER_PORT, RANK and WORLD_SIZE")
    if not _gloo_on_cpu(init.get("backend")):
        raise GradeFailure(f"{what}: rank {rank} asked for backend {init.get('backend')!r}; "
                           f"these CPU tensors need gloo")
    if init.get("timeout") != TIMEOUT_S:
        raise GradeFailure(f"{what}: rank {rank} joined with timeout "
                           f"{init.get('timeout', 'default (30 min)')!r}, expected "
                           f"timeout_s={TIMEOUT_S:g} s: pass datetime.timedelta(seconds=timeout_s)")
    if init.get("raised"):
        # The join itself failed: no group to leave. On gloo, a peer that leaves at once (its
        # work raised right after joining) can make a slower rank's connect fail.
        return
    if case["initialized_after"] or not destroys:
        raise GradeFailure(f"{what}: rank {rank} returned with the process group still "
                           f"initialised; call dist.destroy_process_group() before leaving")


def _gloo_on_cpu(backend) -> bool:
    """None, "gloo", or a device-qualified form that gives CPU gloo ("cpu:gloo,cuda:nccl")."""
    if backend is None or str(backend).lower() == "gloo":
        return True
    return "cpu:gloo" in [part.strip().lower() for part in str(backend).split(",")]


def _ring_problems(events, rank) -> list[str]:
    """The method: lesson 05's ring (ring_all_reduce: 2(p - 1) chunks) or its pass-along
    (p - 1 whole tensors), float32, each rank sending only to the next and receiving only
    from the previous."""
    nxt, prev = (rank + 1) % WORLD_SIZE, (rank - 1) % WORLD_SIZE
    ops = p2p_ops(events)
    sends = [e for e in ops if e.op in ("send", "isend")]
    for e in ops:
        want = nxt if e.op in ("send", "isend") else prev
        if e.peer != want or e.dtype != "float32":
            return [f"rank {rank} called {e.describe()}; the ring sends only to rank {nxt} and "
                    f"receives only from rank {prev}, float32 as the tensor is"]
    waited = {e.waits_for for e in events if e.op == "wait"}
    unwaited = [e for e in ops if not e.blocking and e.seq not in waited]
    if unwaited:
        return [f"rank {rank} never waited for {unwaited[0].describe()}: wait() on every "
                f"request before using its buffer or leaving the job"]
    chunk = -(-NUMEL // WORLD_SIZE)
    ring = len(sends) == 2 * (WORLD_SIZE - 1) and all(e.numel <= chunk for e in sends)
    pass_along = len(sends) == WORLD_SIZE - 1 and all(e.numel == NUMEL for e in sends)
    if not (ring or pass_along):
        return [f"rank {rank} sent {len(sends)} message(s) of "
                f"{', '.join(str(e.numel) for e in sends) or 'no'} element(s); the ring "
                f"all-reduce sends {2 * (WORLD_SIZE - 1)} chunks of at most {chunk} (the "
                f"pass-along ring: {WORLD_SIZE - 1} whole tensors of {NUMEL}): sum with "
                f"labs.ring.ring_all_reduce or pass_along_all_reduce"]
    return []


def test_ring_job(impl, tmp_path):
    records = run_probe(tmp_path, impl)
    check_ring_job({rank: record[impl] for rank, record in records.items()})


def check_ring_job(cases: dict[int, list]):
    """The checks, on every rank's (normal case, small cases..., failing case)."""
    for rank, (normal, *small, failing) in sorted(cases.items()):
        for numel, case in zip((NUMEL, *SMALL), (normal, *small)):
            what = WHAT.replace(f"ring_job({NUMEL},", f"ring_job({numel},")
            total = WORLD_SIZE * torch.arange(numel, dtype=torch.float32) + \
                10 * sum(range(WORLD_SIZE))
            if "raised" in case:
                raise _raised(case, rank, what)
            check_joined_and_left(case, rank, what)
            check_close(torch.tensor(case["returned"], dtype=torch.float32)
                        if isinstance(case["returned"], list) else case["returned"], total,
                        rank=rank, what=what)
            if case["printed"] != format_result(rank, total) + "\n":
                raise GradeFailure(f"{what}: rank {rank} printed {case['printed']!r}; expected "
                                   f"exactly one line {format_result(rank, total)!r}")
        events = [Event(**e) for e in normal["events"]]
        check_p2p_only(events, f"{WHAT}: the ring")
        if not p2p_ops(events):
            raise GradeFailure(f"{WHAT}: rank {rank} sent and received nothing: sum the "
                               f"tensor with a ring of point-to-point ops")
        for problem in _ring_problems(events, rank):
            raise GradeFailure(f"{WHAT}: {problem}")
        what = "ring_job(-1, ...), whose torch.arange raises inside the job"
        if "raised" not in failing:
            raise GradeFailure(f"{what}: rank {rank} returned normally; let the exception "
                               f"propagate so torchrun reports the failed rank")
        check_joined_and_left(failing, rank, what)


if __name__ == "__main__":
    probe(*sys.argv[1:])
