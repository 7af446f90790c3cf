"""--trace: the run as Chrome trace events (the JSON Object Format torch.profiler exports,
for Perfetto and chrome://tracing), loaded back and checked against the format: one process
per rank named "rank N", each op a complete event from post to completion with its peer,
bytes, dtype, tag, file:line and stream, waits, and problems as instant events."""
from __future__ import annotations

import json

import jsonschema
import pytest

from labs.doctor import trace
from labs.harness.commands.torchrun import ROOT
from tests.doctor.jobs import report_of

pytestmark = pytest.mark.slow
NCCL = ROOT / "labs" / "scripts" / "doctor" / "nccl"

# The trace event format (Google's "Trace Event Format" document): the phases used here and
# the keys each requires; ts and dur in microseconds, pid and tid numbers.
EVENT = {
    "type": "object",
    "required": ["name", "ph", "pid", "tid"],
    "properties": {"name": {"type": "string"}, "ph": {"enum": ["X", "i", "M"]},
                   "pid": {"type": "integer"}, "tid": {"type": "integer"},
                   "ts": {"type": "number", "minimum": 0},
                   "dur": {"type": "number", "minimum": 0},
                   "s": {"enum": ["g", "p", "t"]}, "args": {"type": "object"},
                   "cat": {"type": "string"}},
    "allOf": [
        {"if": {"properties": {"ph": {"const": "X"}}}, "then": {"required": ["ts", "dur"]}},
        {"if": {"properties": {"ph": {"const": "i"}}}, "then": {"required": ["ts", "s"]}},
        {"if": {"properties": {"ph": {"const": "M"}}}, "then": {
            "required": ["args"], "properties": {"name": {"enum": [
                "process_name", "process_sort_index", "thread_name"]}}}},
    ],
}
SCHEMA = {"type": "object", "required": ["traceEvents"],
          "properties": {"traceEvents": {"type": "array", "items": EVENT},
                         "displayTimeUnit": {"enum": ["ms", "ns"]}}}


def loaded(script: str, nproc: int, folder) -> tuple:
    report = report_of(NCCL / script, nproc, deadline=90.0)
    path = trace.save(report, folder / f"{script}.json")
    return report, json.loads(path.read_text())


def test_a_clean_run_as_trace_events(tmp_path_factory):
    report, data = loaded("works_loop.py", 2, tmp_path_factory.mktemp("trace"))
    jsonschema.validate(data, SCHEMA)
    events = data["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert names == {(0, "rank 0"), (1, "rank 1")}
    ops = [e for e in events if e["ph"] == "X" and e["cat"] in ("send", "recv")]
    # 3 steps of one isend and one irecv on each of 2 ranks
    assert sorted((e["pid"], e["name"]) for e in ops) == sorted(
        [(r, op) for r in (0, 1) for op in ("isend", "irecv") for _ in range(3)])
    for e in ops:
        a = e["args"]
        assert a["peer"] == 1 - e["pid"] and a["bytes"] == 16 and a["dtype"] == "float32"
        assert a["tag"] == 0 and a["where"].rsplit(":", 1)[1].isdigit()
        assert "works_loop.py" in a["where"] and a["completed"] and "stream" in a
    waits = [e for e in events if e["ph"] == "X" and e["name"] == "wait"]
    assert len(waits) == 12 and all(w["args"]["returned"] for w in waits)
    assert not [e for e in events if e["ph"] == "i"]
    # X events on one thread nest: no two of a rank's lanes overlap
    for pid in (0, 1):
        lanes = {}
        for e in sorted((e for e in events if e["ph"] == "X" and e["pid"] == pid),
                        key=lambda e: e["ts"]):
            key = e["tid"]
            if e["name"] != "wait":
                assert e["ts"] >= lanes.get(key, 0), e
                lanes[key] = e["ts"] + e["dur"]


def test_problems_are_instant_events_at_their_calls(tmp_path_factory):
    report, data = loaded("ring_isend_first.py", 3, tmp_path_factory.mktemp("trace"))
    jsonschema.validate(data, SCHEMA)
    marks = [e for e in data["traceEvents"] if e["ph"] == "i"]
    assert {(e["pid"], e["name"]) for e in marks} >= {(r, "lazy_communicators") for r in range(3)}
    assert all(e["args"]["level"] == "NCCL only" and "isend" not in e["name"] for e in marks)
    assert data["otherData"]["verdict"] == report.verdict()
