"""The NCCL stream model for ungrouped point-to-point calls between two ranks.

NCCL runs one pair's calls in order on a stream, and a send may not complete until its
receive has started (NVIDIA/nccl#479, #783); `batch_isend_irecv` groups its ops into one
fused call. Model: each rank's calls with one peer, in program order, each batch as one
group; a call completes when its matched call on the other rank is at the head of that
rank's stream (or done). Two ranks whose heads wait for each other hang (for messages
larger than NCCL's buffers; small ones may pass): on gloo the same calls completed,
because a gloo isend does not block the calls after it.
"""
from __future__ import annotations

from itertools import combinations

from labs.doctor.findings import Finding

SOURCE = "NVIDIA/nccl#479, #783; torch docs: batch_isend_irecv groups its ops"


def _groups(run, peer, pairs) -> list[list]:
    """The rank's matched calls with `peer`, in order: each batch one group, each other call
    a group of its own."""
    groups, current = [], None
    for c in run.calls:
        if c.peer != peer:
            continue              # a call with another rank: not on this pair's stream
        if not c.p2p or c.raised or id(c) not in pairs:
            current = None
            continue
        if c.batch is not None and current is not None and current[0].batch == c.batch:
            current.append(c)
        else:
            current = [c]
            groups.append(current)
    return groups


def _stuck_heads(a: list, b: list, pairs) -> tuple | None:
    """Run both streams; the two head groups if they end waiting for each other."""
    done, ia, ib = set(), 0, 0
    while ia < len(a) or ib < len(b):
        heads = {id(c) for c in (a[ia] if ia < len(a) else []) + (b[ib] if ib < len(b) else [])}
        moved = False
        for stream, i in ((a, ia), (b, ib)):
            if i < len(stream) and all(id(pairs[id(c)]) in heads | done for c in stream[i]):
                done |= {id(c) for c in stream[i]}
                moved = True
        ia += ia < len(a) and all(id(c) in done for c in a[ia])
        ib += ib < len(b) and all(id(c) in done for c in b[ib])
        if not moved:
            return (a[ia] if ia < len(a) else None, b[ib] if ib < len(b) else None)
    return None


def ungrouped_findings(runs, pairs, hung: bool) -> list:
    if hung:
        return []          # the hang itself is the finding; the model adds nothing
    out = []
    for x, y in combinations(sorted(runs), 2):
        stuck = _stuck_heads(_groups(runs[x], y, pairs), _groups(runs[y], x, pairs), pairs)
        if stuck is None or None in stuck:
            continue
        ca, cb = stuck[0][0], stuck[1][0]
        out.append(Finding(
            "ungrouped_exchange", f"ranks {x} and {y} each wait on a send to the other that "
            f"is not grouped with its receive", (x, y), [(x, ca.where), (y, cb.where)],
            "fine on gloo (observed in this run: a gloo isend does not hold back the calls "
            "after it)", "on NCCL each pair's calls run in order on a stream and a send may "
            "wait for its receive: both ranks wait on a call the other has queued behind its "
            "own. It can hang for large messages; put the pair's isend and irecv in one "
            "batch_isend_irecv", SOURCE, True))
    return out

