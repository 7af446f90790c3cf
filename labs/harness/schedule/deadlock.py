"""Deadlocks: why each rank that cannot move is stuck, and the cycles of ranks that wait
for each other (strongly connected components of the "waits for" graph)."""
from __future__ import annotations

from dataclasses import dataclass, field

from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.verdicts import Verdict


@dataclass
class WaitGraph:
    """Who waits for whom among the ranks that cannot move."""

    edges: dict = field(default_factory=dict)    # rank -> ranks (still running) it waits for
    via: dict = field(default_factory=dict)      # rank -> {rank: op id waited through | None}
    what: dict = field(default_factory=dict)     # rank -> {rank: what it waits in, as text}


def stuck_analysis(sched, sim, matching, backend, nccl):
    """Why each rank that cannot move is stuck; cycles of ranks waiting for each other.
    Returns (stuck: rank -> the call it waits in, verdicts, cycles, send_cycle)."""
    graph, verdicts, stuck = WaitGraph(), [], {}
    for r in range(sched.world_size):
        if sim.state[r] == "running":
            ins = sched.instrs[r][sim.pc[r]]
            verdicts += _waits_of(r, ins, graph, sched, sim, matching, backend)
            stuck[r] = ins.text
    cycle_verdicts, cycles, send_cycle = _cycles(graph, sched.ops, nccl)
    _say_why_stuck(stuck, graph, cycles, sched, sim, matching)
    return stuck, cycle_verdicts + verdicts, cycles, send_cycle


def _waits_of(r, ins, graph, sched, sim, matching, backend) -> list:
    """Add to `graph` the ranks that rank r's current call `ins` waits for."""
    ops = sched.ops
    graph.edges[r], graph.via[r], graph.what[r] = set(), {}, {}
    if ins.collective:
        return _waits_in_collective(r, ins, graph, sim, sched.world_size)
    if ins.rewait and backend == "gloo":
        again = ", ".join(ops[p].where() for p in ins.rewait)
        return [Verdict(
            "double_wait", (r,), f"rank {r}'s call {ins.text} [#{ins.index}] waits again "
            f"for {again}: on gloo each wait() consumes the op's completion, so a second "
            f"wait blocks until the timeout.", Outcome.HANG, True, "NCCL's Work checks CUDA events "
            "that stay recorded: waiting again does not block there.", tuple(ins.rewait))]
    for pid in ins.wait:
        other = matching.get(pid)
        if pid in sim.completed or other is None:
            continue
        o = ops[other].rank
        if sim.state[o] == "running":
            graph.edges[r].add(o)
            graph.via[r].setdefault(o, pid)
            arrow = ops[pid].op.arrow
            graph.what[r].setdefault(o, arrow if ins.post else f"wait({arrow})")
    return []


def _waits_in_collective(r, ins, graph, sim, ws) -> list:
    k = sim.coll_of[(r, ins.index)]
    missing = [o for o in range(ws) if o not in sim.arrivals[k]]
    graph.edges[r] = {o for o in missing if sim.state[o] == "running"}
    graph.via[r] = {o: None for o in graph.edges[r]}
    graph.what[r] = {o: ins.text for o in range(ws)}
    gone = [o for o in missing if sim.state[o] == "done"]
    if not gone:
        return []
    return [Verdict(
        "unmatched_collective", (r, *gone),
        f"rank {r} waits in {ins.text} (its collective call #{k}), but rank"
        f"{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} finished "
        f"without calling it.", Outcome.HANG, True, "the same on NCCL.", ())]


def _cycles(graph, ops, nccl):
    """A deadlock verdict per cycle of waiting ranks; whether one is made of sends only."""
    verdicts, cycles, send_cycle = [], [], False
    for comp in tarjan(graph.edges):
        if len(comp) == 1 and comp[0] not in graph.edges[comp[0]]:
            continue
        sub = {v: graph.edges[v] & set(comp) for v in comp}
        cycle = cycle_through(sub, comp[0])
        nexts = cycle[1:] + cycle[:1]
        words = " while ".join(f"rank {v} waits in {graph.what[v][n]}"
                               for v, n in zip(cycle, nexts))
        pids = [graph.via[v][n] for v, n in zip(cycle, nexts)]
        sends_only = all(p is not None and ops[p].send for p in pids)
        send_cycle |= sends_only
        verdicts.insert(0, Verdict("deadlock", tuple(cycle), f"{words}. {_why(pids, ops)}",
                                   Outcome.HANG, True, _nccl_note(cycle, sends_only, nccl),
                                   tuple(p for p in pids if p is not None)))
        cycles.append(tuple(cycle))
    return verdicts, cycles, send_cycle


def _why(pids, ops) -> str:
    if all(p is not None and ops[p].send for p in pids):
        return ("A send completes only once its receive is posted, and every receive comes "
                "after a send that waits: nobody reaches a receive.")
    if all(p is not None and not ops[p].send for p in pids):
        return "Every receive waits for a send that comes after another receive."
    return "Each rank waits for a call that the next rank in the cycle has not reached."


def _nccl_note(cycle, sends_only, nccl) -> str:
    """What the same cycle does under NCCL's rules (`nccl`: the NCCL report, or None)."""
    if nccl is None:
        return ""
    same = any(v.kind == "deadlock" and set(v.ranks) == set(cycle) for v in nccl.verdicts)
    note = ("the same cycle on NCCL" if same else
            f"no such cycle on NCCL (modelled: {nccl.summary()})")
    if same and sends_only:
        return note + ("; but NCCL may buffer a small send, so there it can complete for "
                       "small messages and hang for large ones: never rely on it.")
    return note + "."


def _say_why_stuck(stuck, graph, cycles, sched, sim, matching):
    """Add to a stuck rank's call whom it waits behind (outside a cycle), and who failed first."""
    ops, in_cycle = sched.ops, {r for c in cycles for r in c}
    for r in stuck:
        notes, behind = [], graph.edges[r]
        if r not in in_cycle and behind:
            notes.append(f"behind rank{'s' if len(behind) > 1 else ''} "
                         f"{', '.join(map(str, sorted(behind)))}, which cannot move")
        dead = sorted({ops[matching[pid]].rank for pid in sched.instrs[r][sim.pc[r]].wait
                       if pid in matching and sim.state[ops[matching[pid]].rank] == "failed"})
        if dead:
            notes.append(f"rank {', '.join(map(str, dead))} failed first; in a real run this "
                         f"rank then fails with 'Connection closed by peer'")
        if notes:
            stuck[r] += " (" + "; ".join(notes) + ")"


def tarjan(graph) -> list:
    """Strongly connected components of {node: set(successors)}."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_through(graph, start) -> list:
    """Shortest cycle start -> ... -> start (breadth first), as the list of its nodes."""
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]
