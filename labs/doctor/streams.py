"""The NCCL stream model for point-to-point calls (modelled, never run here).

NCCL runs a communicator's calls in order on its stream, and a send may not complete until
its receive has started (NVIDIA/nccl#479, #783); `batch_isend_irecv` groups its ops into one
fused call. Which calls share a stream depends on the communicator (communicators.py):
without device_id, each pair's ungrouped calls have a communicator and stream of their own;
with device_id, every point-to-point op of a rank runs on its group's one communicator, in
program order, whatever the peer. Each process group has communicators of its own; a group
made with new_group(backend="gloo") beside an NCCL default group stays on the CPU and is on
no stream (communicators.cpu_groups). Model: each stream's calls in program order, each batch
as one group; a group completes when the call each of its ops is paired with (NCCL pairs by
order, not tags: match(runs, tags=False)) is at the head of its own stream, or done. Heads
that wait for each other hang for messages larger than NCCL's buffers (small ones may pass):
on gloo the same calls completed, because a gloo isend does not block the calls after it.
"""
from __future__ import annotations

from itertools import combinations, product

from labs.doctor.communicators import LAZY_SOURCE, cpu_groups, eager
from labs.doctor.findings import Finding

SOURCE = "NVIDIA/nccl#479, #783; torch docs: batch_isend_irecv groups its ops"


def _peer(c, pairs):
    """The rank on the other side of a point-to-point call: for a receive from any source,
    the sender it was matched with (so it stays on that pair's stream)."""
    if c.peer is not None or id(c) not in pairs:
        return c.peer
    return pairs[id(c)].rank


def _groups(run, pairs, group, peer=None) -> list[list]:
    """The rank's paired calls on one stream of process group `group`, in order (with
    `peer`, or with every peer when peer is None): each batch one group, each other call a
    group of its own. Every process group has its own communicator, so its own stream."""
    groups, current = [], None
    for c in run.calls:
        if c.group != group or (peer is not None and _peer(c, pairs) != peer):
            continue              # a call on another communicator: not on this stream
        if not c.p2p or c.raised or id(c) not in pairs:
            current = None
            continue
        if c.batch is not None and current is not None and current[0].batch == c.batch:
            current.append(c)
        else:
            current = [c]
            groups.append(current)
    return groups


def _nccl_groups(runs) -> list:
    """The process groups whose calls the NCCL model runs (not the CPU groups)."""
    cpu = cpu_groups(runs)
    return sorted({c.group for run in runs.values() for c in run.calls} - cpu)


def stuck_heads(streams: dict, pairs) -> dict:
    """Run every stream; {key: its head group} for the streams left waiting ({} if none)."""
    at = {k: 0 for k in streams}
    done: set = set()
    while True:
        heads = {id(c) for k, g in streams.items() if at[k] < len(g) for c in g[at[k]]}
        moved = False
        for k, g in streams.items():
            if at[k] < len(g) and all(id(pairs[id(c)]) in heads | done for c in g[at[k]]):
                done |= {id(c) for c in g[at[k]]}
                at[k] += 1
                moved = True
        if not moved:
            return {k: g[at[k]] for k, g in streams.items() if at[k] < len(g)}


def ungrouped_findings(runs, pairs, hung: bool) -> list:
    """`pairs`: NCCL's (by order, tags ignored)."""
    if hung:
        return []          # the hang itself is the finding; the model adds nothing
    if eager(runs):
        return _one_stream(runs, pairs)
    out = []
    for group, (x, y) in product(_nccl_groups(runs), combinations(sorted(runs), 2)):
        stuck = stuck_heads({x: _groups(runs[x], pairs, group, y),
                             y: _groups(runs[y], pairs, group, x)}, pairs)
        if len(stuck) < 2 or not all(any(c.kind == "send" for c in g) for g in stuck.values()):
            continue
        ca, cb = stuck[x][0], stuck[y][0]
        out.append(Finding(
            "ungrouped_exchange", f"ranks {x} and {y} each wait on a send to the other that "
            f"is not grouped with its receive", (x, y), [(x, ca.where), (y, cb.where)],
            "fine on gloo (observed in this run: a gloo isend does not hold back the calls "
            "after it)", "on NCCL each pair's calls run in order on a stream and a send may "
            "wait for its receive: both ranks wait on a call the other has queued behind its "
            "own. It can hang for large messages; put the pair's isend and irecv in one "
            "batch_isend_irecv", SOURCE, True))
    return out


def _one_stream(runs, pairs) -> list:
    streams = {(r, g): _groups(run, pairs, g) for g in _nccl_groups(runs)
               for r, run in runs.items()}
    stuck = {r: heads for (r, _), heads in sorted(stuck_heads(streams, pairs).items())}
    if len(stuck) < 2 or not any(c.kind == "send" for g in stuck.values() for c in g):
        return []
    ranks = tuple(sorted(stuck))
    words = "; ".join(f"rank {r} waits in {g[0].describe()}" for r, g in sorted(stuck.items()))
    return [Finding(
        "ungrouped_exchange", f"ranks {', '.join(map(str, ranks))} each wait on a call "
        f"queued behind an ungrouped send", ranks, [(r, g[0].where) for r, g in
                                                      sorted(stuck.items())],
        "fine on gloo (observed in this run: a gloo isend does not hold back the calls after "
        "it)", f"with device_id every point-to-point op of a rank runs on the group's one "
        f"communicator, in program order, and a send may wait for its receive: {words}, each "
        f"behind a call its peer has not reached. It can hang for large messages; put each "
        f"step's sends and receives in one batch_isend_irecv", f"{SOURCE}; {LAZY_SOURCE}",
        True)]
