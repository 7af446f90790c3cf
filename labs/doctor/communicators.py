"""NCCL's communicators for point-to-point calls (modelled, never run here).

Without `device_id` in init_process_group, ProcessGroupNCCL makes no communicator at init.
An ungrouped send or receive uses a communicator of its own for the pair (key
"lowRank:highRank"), created at the pair's first such call, and creating it takes both
ranks: the lower rank puts an ncclUniqueId in the store and waits in ncclCommInitRank, the
higher one waits for the id. A rank whose first call to its right neighbour meets a
neighbour busy creating ITS right pair waits; around a ring, nobody joins: a hang at any
message size. batch_isend_irecv (and collectives) use the group's own communicator instead,
made by the first such call on every rank.

With `device_id`, init_process_group creates the group's communicator at once
(eager_connect_single_device) and every point-to-point op uses it: no pair is created
later (streams.py then models one stream per rank and group). Every process group has
communicators of its own (each ProcessGroupNCCL keeps its own map of them, the pairs'
included); kernels.py orders them across groups.
"""
from __future__ import annotations

from labs.doctor.findings import Finding
from labs.harness.schedule.deadlock import cycle_through, tarjan

LAZY_SOURCE = ("torch ProcessGroupNCCL.cpp, pointToPoint (an ungrouped op's communicator key "
               "is getKeySendRecv(rank, peer), 'lowRank:highRank'; getNCCLComm has none at "
               "the pair's first op and initNCCLComm creates it with both ranks, the id "
               "passed through the store by broadcastUniqueNCCLID); batched ops use "
               "getKeyFromDevice, the group's communicator; with device_id, "
               "distributed_c10d.py _new_process_group_helper calls "
               "eager_connect_single_device and pointToPoint reuses that communicator "
               "(pytorch/pytorch#129140, #132900; torch 2.13 ProcessGroupNCCL.hpp: eagerInit_, "
               "TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING)")
LAZY_NCCL = ("a hang at any message size. Without device_id in init_process_group, NCCL "
             "creates a 2-rank communicator for each pair at the pair's first ungrouped send "
             "or receive, and both ranks must take part: {chain}, so no pair is ever "
             "created. Put each step's sends and receives in one batch_isend_irecv (it uses "
             "the group's communicator), or order the first calls so that each pair meets")
MIXED_NCCL = ("a hang at any message size. Without device_id, rank {r}'s ungrouped "
              "{what} uses a 2-rank communicator of its own for the pair (created at this "
              "first call, with both ranks), but rank {p} talks to rank {r} only inside "
              "batch_isend_irecv, which uses the group's communicator: rank {p} never joins "
              "the pair's, and the two never meet. Group both sides, or neither")


def cpu_groups(runs) -> set:
    """Names of the groups that stay on gloo on a GPU run: made with new_group(backend=
    "gloo") by a script whose default group asked for another backend (vLLM's cpu_group).
    Every other group is modelled as NCCL, the default group included."""
    out = set()
    for run in runs.values():
        asked = run.inits[0].text if run.inits else ""
        if asked and asked != "gloo":
            out |= {g.group for g in run.groups if g.text == "gloo" and g.group}
    return out


def nccl_calls(run, cpu: set) -> list:
    """The rank's calls that would reach NCCL: every call but those on a CPU group."""
    return [c for c in run.calls if c.group not in cpu]


def eager(runs) -> bool:
    """Every rank passed device_id: NCCL's communicator is made at init."""
    return bool(runs) and all(getattr(run, "device_id", False) for run in runs.values())


def _firsts(run, ranks, cpu) -> list:
    """The rank's first ungrouped point-to-point call with each peer on each NCCL group, in
    program order: where NCCL would create that pair's communicator (one per group)."""
    seen, out = set(), []
    for c in nccl_calls(run, cpu):
        if not c.p2p or c.batch is not None or c.raised or c.peer is None \
                or c.peer == c.rank or c.peer not in ranks or (c.group, c.peer) in seen:
            continue
        seen.add((c.group, c.peer))
        out.append(c)
    return out


def _batched_with(run, peer, group) -> bool:
    return any(c.p2p and c.batch is not None and c.peer == peer and c.group == group
               for c in run.calls)


def _waiting(runs) -> dict:
    """Create the pairs' communicators as the ranks reach their first calls (a pair when
    both ranks' next first call is to each other on one group); rank -> the call it would
    wait in."""
    cpu = cpu_groups(runs)
    steps = {r: _firsts(run, set(runs), cpu) for r, run in runs.items()}
    at = {r: 0 for r in runs}
    moved = True
    while moved:
        moved = False
        for r in sorted(runs):
            if at[r] < len(steps[r]):
                c = steps[r][at[r]]
                other = steps[c.peer][at[c.peer]] if at[c.peer] < len(steps[c.peer]) else None
                if other is not None and other.peer == r and other.group == c.group:
                    at[r], at[c.peer], moved = at[r] + 1, at[c.peer] + 1, True
    return {r: steps[r][at[r]] for r in runs if at[r] < len(steps[r])}


def lazy_findings(runs) -> list:
    """Pairs whose communicator would never be created: a cycle of first calls, or a pair
    one side reaches ungrouped and the other only in batches."""
    if eager(runs):
        return []
    waiting = _waiting(runs)
    edges = {r: {c.peer} & set(waiting) for r, c in waiting.items()}
    out = []
    for comp in tarjan(edges):
        if len(comp) < 2:
            continue
        cycle = cycle_through({v: edges[v] & set(comp) for v in comp}, comp[0])
        calls = [waiting[r] for r in cycle]
        chain = "; ".join(f"rank {c.rank}'s {c.describe()} waits for rank {c.peer}, busy "
                          f"in its own first call to rank {waiting[c.peer].peer}"
                          for c in calls)
        out.append(Finding(
            "lazy_communicators", f"ranks {', '.join(map(str, cycle))} each wait for a "
            f"neighbour to create a communicator", tuple(cycle),
            [(c.rank, c.where) for c in calls],
            "fine on gloo (observed in this run: gloo connects every pair when the group is "
            "made)", LAZY_NCCL.format(chain=chain), LAZY_SOURCE, True))
    for r, c in waiting.items():
        p = c.peer
        if p not in waiting and _batched_with(runs[p], r, c.group):
            out.append(Finding(
                "lazy_communicators", f"rank {r} reaches rank {p} ungrouped, rank {p} "
                f"reaches rank {r} only in a batch", (r, p), [(r, c.where)],
                "fine on gloo (observed in this run: one connection per pair, batched or "
                "not)", MIXED_NCCL.format(r=r, p=p, what=c.describe()), LAZY_SOURCE, True))
    return out
