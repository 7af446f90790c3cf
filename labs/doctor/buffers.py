"""Buffers: used while in flight (the version counter at the wait, the buffer watch), and
matched pairs whose sizes or dtypes disagree (gloo matches bytes, nothing else)."""
from __future__ import annotations

from labs.doctor.diagnose import NCCL_SIZES
from labs.doctor.findings import Finding


def in_flight_findings(runs) -> list:
    out = []
    for run in runs.values():
        for c in run.calls:
            notes = c.touched + ([(c.wait_where or c.where, c.changed)] if c.changed else [])
            if not notes:
                continue
            where, text = notes[0]
            out.append(Finding(
                "buffer_in_flight", f"the buffer of {c.describe()} used while in flight",
                (c.rank,), [(c.rank, c.where), (c.rank, where)],
                f"{text}: {_race(c)}", "the same race on NCCL, on the GPU's "
                "stream: the buffer belongs to the transfer until wait()"))
    return out


def _race(c) -> str:
    if c.kind == "recv":
        return ("a read before wait() sees stale or partial data, and a write can be "
                "overwritten by the message (a race with gloo's thread)")
    return ("what is sent is whatever the buffer held at the moment gloo's thread copied it "
            "(a race)")


def _abort_seen(run) -> bool:
    return run.exit is None and "Received data size doesn't match" in run.stderr


def size_findings(runs, pairs) -> list:
    out, seen = [], set()
    for run in runs.values():
        for s in run.calls:
            q = pairs.get(id(s))
            if s.kind != "send" or q is None or id(s) in seen:
                continue
            seen.add(id(s))
            if s.nbytes == q.nbytes and s.dtype == q.dtype:
                continue
            out.append(_mismatch(s, q, runs[q.rank]))
    return out


def _mismatch(s, q, receiver) -> Finding:
    where = [(s.rank, s.where), (q.rank, q.where)]
    pair = f"rank {s.rank}'s {s.describe()} -> rank {q.rank}'s {q.describe()}"
    if q.nbytes < s.nbytes:
        seen = ("rank {r} was killed by SIGABRT ('Received data size doesn't match "
                "expected size'): nothing can catch it" if _abort_seen(receiver) else
                "rank {r} finished before the message arrived; had it arrived, gloo would "
                "have aborted it (SIGABRT)" if receiver.finished else
                "gloo aborts the receiving process (SIGABRT) when the message arrives")
        return Finding("size_mismatch", "the receive buffer is smaller than the message",
                       (s.rank, q.rank), where, f"{pair}: {seen.format(r=q.rank)}",
                       NCCL_SIZES)
    if q.nbytes > s.nbytes:
        return Finding("size_mismatch", "the receive buffer is larger than the message",
                       (s.rank, q.rank), where, f"{pair}: gloo filled the first {s.nbytes} "
                       f"bytes and left the rest of the buffer as it was, without an error",
                       NCCL_SIZES)
    return Finding("dtype_mismatch", f"{s.dtype} sent, read as {q.dtype}", (s.rank, q.rank),
                   where, f"{pair}: the same {s.nbytes} bytes, silently reinterpreted "
                   f"(gloo matches bytes, not types)", NCCL_SIZES)
