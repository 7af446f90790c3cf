"""The run as Chrome trace events (the JSON Object Format torch.profiler exports), for
Perfetto (ui.perfetto.dev) and chrome://tracing: `python -m labs.doctor --trace run.json ...`.

One process per rank ("rank N", metadata "M" events). Each op is a complete "X" event from
its post to its completion (name: the op; args: peer, bytes, dtype, tag, file:line, stream),
each wait() an "X" event on the rank's "waits" thread, each problem an instant "i" event at
the call it names. Ops in flight at once on one rank get lanes of their own ("in flight 1",
"in flight 2", ...): X events on one thread must nest, and async ops overlap freely.
Timestamps and durations are in microseconds from the first event of the run.
"""
from __future__ import annotations

import json
from pathlib import Path

WAITS = 0                      # the thread id of a rank's waits; lanes of ops from 1
_OPS = {("send", True): "send", ("send", False): "isend", ("recv", True): "recv",
        ("recv", False): "irecv"}


def _us(t: float, t0: float) -> float:
    return round((t - t0) * 1e6, 3)


def _meta(rank: int, lanes: int) -> list[dict]:
    out = [{"name": "process_name", "ph": "M", "pid": rank, "tid": WAITS,
            "args": {"name": f"rank {rank}"}},
           {"name": "process_sort_index", "ph": "M", "pid": rank, "tid": WAITS,
            "args": {"sort_index": rank}},
           {"name": "thread_name", "ph": "M", "pid": rank, "tid": WAITS,
            "args": {"name": "waits"}}]
    out += [{"name": "thread_name", "ph": "M", "pid": rank, "tid": k,
             "args": {"name": f"in flight {k}"}} for k in range(1, lanes + 1)]
    return out


def _ops(run, t0: float, end: float) -> tuple[list[dict], int]:
    """The rank's ops as X events, each on the first lane free at its post."""
    free_at: list[float] = []         # lane k + 1 is free from free_at[k]
    out = []
    for c in run.calls:
        if c.raised:
            continue
        done = c.t_done if c.t_done is not None else end
        start, stop = c.t_post, max(done, c.t_post)
        lane = next((k for k, t in enumerate(free_at) if t <= start), None)
        if lane is None:
            free_at.append(stop)
            lane = len(free_at) - 1
        free_at[lane] = stop
        args = {"peer": c.peer, "bytes": c.nbytes, "dtype": c.dtype, "tag": c.tag,
                "where": c.where, "stream": c.stream or "", "completed": c.t_done is not None}
        if c.batch is not None:
            args["batch"] = c.batch
        out.append({"name": _OPS.get((c.kind, c.blocking), c.name), "cat": c.kind, "ph": "X",
                    "ts": _us(start, t0), "dur": _us(stop, start), "pid": run.rank,
                    "tid": lane + 1, "args": args})
    return out, len(free_at)


def _waits(rank: int, events: list, t0: float, end: float) -> list[dict]:
    """wait() from its start to its return (or failure, or the run's end)."""
    out, open_waits = [], {}
    for e in events:
        if e.event == "wait":
            open_waits[e.seq] = e
        elif e.event in ("waited", "wait_failed") and e.seq in open_waits:
            w = open_waits.pop(e.seq)
            out.append(_wait(rank, w, e.t, t0, e.event == "waited"))
    out += [_wait(rank, w, end, t0, False) for w in open_waits.values()]
    return out


def _wait(rank, w, stop, t0, ok) -> dict:
    return {"name": "wait", "cat": "wait", "ph": "X", "ts": _us(w.t, t0),
            "dur": _us(max(stop, w.t), w.t), "pid": rank, "tid": WAITS,
            "args": {"op": w.seq, "where": w.where, "returned": ok}}


def _problems(report, t0: float) -> list[dict]:
    out = []
    for f in report.findings:
        for rank, where in f.where[:1] + [w for w in f.where[1:] if w[0] != f.where[0][0]]:
            run = report.runs.get(rank)
            call = next((c for c in run.calls if c.where == where), None) if run else None
            t = call.t_post if call is not None else (run.t_last if run else t0)
            out.append({"name": f.kind, "cat": "problem", "ph": "i", "s": "p",
                        "ts": _us(t, t0), "pid": rank, "tid": WAITS,
                        "args": {"title": f.title, "where": where,
                                 "level": "note" if f.note else
                                 "NCCL only" if f.nccl_only else "gloo"}})
    return out


def events(report) -> dict:
    """The trace as a JSON object: {"traceEvents": [...], "displayTimeUnit": "ms", ...}."""
    raw = report.outcome.events if report.outcome is not None else {}
    starts = [e.t for evs in raw.values() for e in evs] or [0.0]
    t0 = min(starts)
    end = max(starts)
    out = []
    for rank, run in sorted(report.runs.items()):
        ops, lanes = _ops(run, t0, end)
        out += _meta(rank, lanes) + ops + _waits(rank, raw.get(rank, []), t0, end)
    out += _problems(report, t0)
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"command": report.command, "verdict": report.verdict()}}


def save(report, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(events(report)))
    return path
