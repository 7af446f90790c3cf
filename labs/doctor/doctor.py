"""From a run's outcome to the report: every rank's record read back, every rule applied."""
from __future__ import annotations


from labs.doctor import (buffers, communicators, diagnose, exits, failures, kernels,
                         portability, streams, torch_docs)
from labs.doctor.matching import match
from labs.doctor.ranks import read_rank
from labs.doctor.report import Report, merged, show_path


def _runs(outcome) -> dict:
    runs = {r: read_rank(r, evs) for r, evs in outcome.events.items()}
    for r, run in runs.items():
        if r in outcome.outputs:
            run.stderr = outcome.outputs[r].stderr
    return runs


def findings(runs: dict, outcome) -> list:
    pairs = match(runs)
    hung, explained = diagnose.hang_findings(runs, outcome, pairs)
    refused = buffers.refused_findings(runs)
    found = hung + failures.self_findings(runs) + refused
    found += diagnose.lone_findings(runs, outcome, pairs, explained)
    found += buffers.size_findings(runs, pairs) + buffers.in_flight_findings(runs)
    found += buffers.stream_findings(runs)
    lone = {i for f in found if f.kind.startswith(("unmatched", "tag_", "group_")) for i in f.extra}
    found += diagnose.wait_findings(runs, lone)
    found += failures.polling_findings(runs)
    found += failures.failure_findings(runs, {r for f in found for r in f.ranks})
    found += failures.pinned_findings(runs)
    found += portability.any_source_findings(runs) + portability.tag_findings(runs, pairs)
    found += portability.first_batch_findings(runs)
    found += portability.work_findings(runs, outcome.events)
    found += portability.same_gpu_findings(runs, outcome.events)
    found += _lazy(communicators.lazy_findings(runs), hung)
    nccl_pairs, stopped = match(runs, tags=False), bool(hung) or bool(outcome.stopped)
    found += streams.ungrouped_findings(runs, nccl_pairs, stopped)
    found += kernels.order_findings(runs, nccl_pairs, pairs, stopped)
    return failures.one_bug_one_problem(buffers.without_consequences(found, refused), runs)


def _lazy(lazy: list, hung: list) -> list:
    """A deadlock on gloo whose ranks the communicator cycle covers hangs on NCCL at any
    size: say it in the deadlock's entry, not twice."""
    out = []
    for f in lazy:
        same = [d for d in hung if set(d.ranks) <= set(f.ranks)]
        for d in same:
            if d.nccl == diagnose.NCCL_DEADLOCK:    # not "may pass for small messages"
                d.nccl, d.source = (f"the same hang on NCCL, and at any size: "
                                    f"{f.nccl.split('. ', 1)[1]}", f.source)
        if not same:
            out.append(f)
    return out


def _ending(runs, outcome, world_size) -> list[str]:
    if outcome.stopped == "stuck":
        lines = ["the job hung: the doctor stopped it when every rank was waiting and "
                 "none had moved for a while"]
    elif outcome.stopped == "deadline":
        lines = [exits.deadline_line(runs, outcome, world_size)]
    elif outcome.returncode == 0:
        return ["every rank finished"]
    else:
        failed = [f"rank {r} " + (run.exit.text if run.exit.kind == "polled" else
                                  exits.how_it_ended(run.exit.text))
                  for r, run in runs.items() if run.exit is not None and run.exit.text]
        lines = ["the job failed" + (": " + ", ".join(failed) if failed else "")]
    for r, stack in sorted(outcome.stacks.items()):
        lines.append(f"rank {r}, read by py-spy: {_where(stack)}")
    missing = [r for r in range(world_size) if r not in runs]
    if missing:
        lines.append(f"ranks that never started the script: {missing}")
    for r in failures.died(runs, outcome):
        if not any(e.event == "exit" for e in outcome.events.get(r, [])):
            lines.append(f"rank {r} ended without finishing its script (a signal, or stopped "
                         f"by torchrun when another rank failed)")
    return lines


def _where(stack) -> str:
    """'recv  <-  main (my_script.py:12)': the call it is in, then the script's frames."""
    mine = [f"{f.function} ({show_path(f.file + ':' + str(f.line))})" for f in stack.frames
            if not any(p in f.file for p in ("site-packages", "/lib/python", "labs/doctor",
                                               "labs/harness", "<frozen"))]
    return "  <-  ".join([stack.frames[0].function if stack.frames else "?"] + mine[:3])


def _timings(runs, outcome) -> list[str]:
    ends = [run.exit for run in runs.values() if run.exit is not None and run.exit.elapsed_s]
    lines = [f"the doctor's run took {outcome.seconds:.1f} s"]
    warm = [run.warmup_s for run in runs.values() if run.warmup_s]
    if warm:
        lines.append(f"record overhead, once per rank before the script: "
                     f"{1e3 * min(warm):.1f}-{1e3 * max(warm):.1f} ms")
    if ends:
        worst = max(ends, key=lambda e: e.overhead_s / e.elapsed_s)
        lines.append(f"record overhead while the script ran: {worst.overhead_s * 1e3:.1f} ms "
                     f"of {worst.elapsed_s:.2f} s on rank {worst.rank} "
                     f"({100 * worst.overhead_s / worst.elapsed_s:.1f}%, the highest share "
                     f"of any rank: time in the doctor's hooks, measured in each rank)")
    bare = [t for t in outcome.bare.values() if t > 0]
    if ends and bare:
        with_record = sorted(e.elapsed_s for e in ends)[len(ends) // 2]
        without = sorted(bare)[len(bare) // 2]
        lines.append(f"the script's time per rank (median) with the record: {with_record:.3f} s; "
                     f"run again without it: {without:.3f} s (x{with_record / without:.2f}; "
                     f"one run each, noisy)")
    return lines


def report(outcome) -> Report:
    runs = _runs(outcome)
    world = max([run.world_size for run in runs.values()] + [len(runs), outcome.job.nproc()])
    found = findings(runs, outcome)
    # each rank's header lines, each once (a rank may have used more that differs)
    notes = list(dict.fromkeys(n for run in runs.values() for n in run.asked.splitlines()))
    errors = failures.script_errors(runs)
    notes += exits.script_errors(errors)
    notes += _streams_note(runs) + torch_docs.limits_used(runs)
    found = merged(found)
    checked = _checked(runs)
    failed = bool(errors) or (outcome.returncode not in (0, None)) or not runs \
        or outcome.stopped == "deadline" or not checked
    status = 1 if any(not f.note for f in found) else 2 if failed else 0
    timings = _timings(runs, outcome)
    return Report(outcome.job.command(), world, found, _ending(runs, outcome, world), notes,
                  status, timings if checked else timings[:1], runs=runs, outcome=outcome,
                  checked=checked)


def _checked(runs) -> bool:
    """Something was checked: a process group was made and used (a call recorded)."""
    return any(run.calls or run.batches for run in runs.values())


def _streams_note(runs) -> list[str]:
    """What the NCCL model cannot decide for this script: said as "not modelled"."""
    out = []
    used = sorted({c.stream for run in runs.values() for c in run.calls
                   if c.stream not in ("", "default")})
    if used:
        out.append(f"not modelled: CUDA streams used for communication ({', '.join(used)}): "
                   f"each received buffer's uses after its wait are checked against the "
                   f"stream the wait was issued on (wait_stream, events, synchronize); not "
                   f"checked: whether the stream a send was posted on was ordered after the "
                   f"stream that wrote its buffer, nor the caching allocator's reuse of "
                   f"buffers across streams (record_stream)")
    cpu = communicators.cpu_groups(runs)
    if any(c.group in cpu and c.p2p and not c.blocking for run in runs.values()
           for c in run.calls):
        out.append("not modelled: waits on a CPU group's isend/irecv (gloo beside NCCL): "
                   "the NCCL model lets the host run past them")
    if len({run.device_id for run in runs.values()}) > 1:
        out.append("not modelled: device_id given on some ranks only")
    return out
