"""From a real run's trace (`labs.harness.ranks.tracing.Event` list) back to a schedule."""
from __future__ import annotations

from collections import defaultdict

from labs.harness.ranks.calls import P2P_CALLS, P2PCall
from labs.harness.schedule.language import Batch, Collective, Compute, ScheduledOp, wait


def from_trace(events) -> dict:
    """`{rank: [calls...]}` from `results.trace`: the calls each rank really made, in order.

    send/recv/isend/irecv with their real peers, sizes, dtypes and tags; batches
    (consecutive ops with the same batch number); waits (`wait()` when they cover everything
    in flight, `wait(batch)` when they cover a whole batch, else one op); barriers and other
    collectives; compute spans. `check(from_trace(results.trace))` explains a real run."""
    by_rank = defaultdict(list)
    for e in events:
        by_rank[e.rank].append(e)
    if not by_rank:
        raise ValueError("the trace is empty")
    return {r: _RankReader().read(evs) for r, evs in sorted(by_rank.items())}


class _RankReader:
    """One rank's events, in order, turned into calls. Consecutive waits are written
    together, so that waits covering a whole batch or everything become one call."""

    def __init__(self):
        self.items = []         # the calls so far
        self.inflight = []      # posted, not waited for: (event, op, its batch or None)
        self.waits = []         # consecutive waits not written yet: entries of `inflight`
        self.done = []          # already waited for: a second wait on one is a rewait
        self.batch = None       # the batch being read: (batch number, Batch)

    def read(self, events) -> list:
        for e in events:
            if e.op == "wait":
                self._wait(e)
                continue
            self._write_waits()
            self._call(e)
        self._write_waits()
        return self.items

    def _wait(self, e):
        # A wait names the op it waits for by that op's `seq`.
        waited = [c for c in self.inflight if c[0].seq == e.waits_for]
        if waited:
            self.inflight.remove(waited[0])
            self.waits.append(waited[0])
        else:                   # waiting again on an op already waited for
            self._write_waits()
            self.waits.extend(c for c in self.done if c[0].seq == e.waits_for)
        self.batch = None

    def _call(self, e):
        if e.op in P2P_CALLS:
            op = ScheduledOp(P2PCall(e.op), e.peer, max(int(e.numel), 1), e.dtype or "float32",
                             int(e.tag))
            if e.batch is not None:
                if self.batch is None or self.batch[0] != e.batch:
                    self.batch = (e.batch, Batch([]))
                    self.items.append(self.batch[1])
                self.batch[1].ops.append(op)
                self.inflight.append((e, op, self.batch[1]))
                return
            self.items.append(op)
            if not op.blocking:
                self.inflight.append((e, op, None))
        elif e.op == "compute":
            self.items.append(Compute(e.label or "compute"))
        else:
            self.items.append(Collective(e.op))
        self.batch = None

    def _write_waits(self):
        if not self.waits:
            return
        if not self.inflight and not any(w in self.done for w in self.waits):   # wait()
            self.items.append(wait())
        else:
            ids, written = {id(op) for _, op, _ in self.waits}, set()
            for _, op, b in self.waits:
                if b is not None and all(id(o) in ids for o in b.ops):
                    if id(b) not in written:
                        written.add(id(b))
                        self.items.append(wait(b))
                else:
                    self.items.append(wait(op))
        self.done.extend(w for w in self.waits if w not in self.done)
        self.waits.clear()
