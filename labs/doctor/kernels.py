"""NCCL's order of kernels per rank, across communicators, collectives and barriers included
(modelled, never run here).

Each rank's calls, in program order, are host steps:
  - a call on an NCCL group issues a kernel on a communicator (a batch_isend_irecv is one
    fused kernel): the group's own for batches, collectives and barriers, and with device_id
    for every point-to-point op; without device_id an ungrouped send or receive uses its
    pair's own (communicators.py). The host does not wait for the kernel, except:
      * without device_id a communicator is made at its first use, with every member:
        the host waits there until each member reaches its first call on it;
      * a barrier: ProcessGroupNCCL blocks the CPU until the barrier completes;
  - a call on a CPU group (new_group(backend="gloo") beside NCCL) runs on gloo: a blocking
    one (send, recv, a collective) holds the host until its peers reach theirs.
A rank's kernels run in the order it issued them, whatever their communicator: NCCL's guide
does not let two communicators' operations rely on running concurrently, so ranks must issue
them in the same order. A kernel finishes when what it is paired with (the matched send or
receive, NCCL's order pairing; every member's same-numbered collective on the group) runs too.
Ranks left waiting are a hang. The model reports the waits that involve a collective, a
barrier or a CPU group's call; point-to-point-only waits are streams.py's and
communicators.py's.
"""
from __future__ import annotations

from dataclasses import dataclass

from labs.doctor.communicators import LAZY_SOURCE, cpu_groups, eager
from labs.doctor.findings import Finding

SOURCE = ("NCCL user guide: CUDA Stream Semantics (a call is enqueued on its stream and "
          "runs asynchronously, in stream order), Creating a Communicator, 'Using multiple "
          "NCCL communicators concurrently' (operations on different communicators must be "
          "issued in the same order on every rank; NVIDIA/nccl#1174, #195); torch 2.13 distributed_c10d.py "
          "barrier docstring (ProcessGroupNCCL blocks the CPU until the barrier completes); "
          "new_group inherits device_id (_new_group_with_tag: default_pg.bound_device_id)")


@dataclass
class Step:
    """One host step of a rank: a call, or a batch's calls."""

    rank: int
    index: int
    calls: list
    comm: tuple | None        # ("group", name) or ("pair", name, low, high); None: CPU group
    blocks: bool              # the host waits for it to finish (barrier, blocking gloo call)
    creates: bool = False     # its communicator's first use on this rank (no device_id)

    @property
    def first(self):
        return self.calls[0]

    @property
    def collective(self) -> bool:
        return self.first.kind in ("sync", "collective")


def _comm(c, peer, cpu, eager_) -> tuple | None:
    if c.group in cpu:
        return None
    if c.batch is not None or not c.p2p or eager_:
        return ("group", c.group)
    return ("pair", c.group, min(c.rank, peer), max(c.rank, peer))


def _peer(c, pairs):
    partner = pairs.get(id(c))
    return c.peer if c.peer is not None else partner.rank if partner is not None else None


def _steps(run, pairs, cpu, eager_) -> list[Step]:
    """The rank's host steps; calls nothing matched (reported elsewhere) are left out."""
    steps, made = [], set()
    for c in run.calls:
        if c.raised or (c.p2p and (id(c) not in pairs or c.peer == c.rank)):
            continue
        if c.batch is not None and steps and steps[-1].first.batch == c.batch:
            steps[-1].calls.append(c)
            continue
        comm = _comm(c, _peer(c, pairs), cpu, eager_)
        blocks = c.kind == "sync" if comm is not None else (c.blocking or not c.p2p)
        steps.append(Step(run.rank, len(steps), [c], comm, blocks,
                          comm is not None and not eager_ and comm not in made))
        made.add(comm)
    return steps


def _members(step, runs) -> set:
    if step.comm is not None and step.comm[0] == "pair":
        return set(step.comm[2:])
    return set(step.first.group_ranks or runs) & set(runs)


def _collectives(steps) -> dict:
    """(group, k) -> {rank: the rank's k-th collective or barrier step on that group}."""
    out = {}
    for r, ss in steps.items():
        count = {}
        for s in ss:
            if s.collective:
                k = count[s.first.group] = count.get(s.first.group, -1) + 1
                out.setdefault((s.first.group, k), {})[r] = s
    return out


class _Machine:
    """Every rank's steps run together: hosts issue kernels, kernels finish in each rank's
    issue order, until nothing moves."""

    def __init__(self, runs, steps, pairs):
        self.runs, self.steps, self.pairs = runs, steps, pairs
        self.host = {r: 0 for r in steps}            # the next step each host takes
        self.queue = {r: [] for r in steps}          # issued kernels not finished, in order
        self.issued, self.done, self.made = set(), set(), set()
        self.step_of = {id(c): s for ss in steps.values() for s in ss for c in s.calls}
        self.table = _collectives(steps)
        self.number = {id(s): key for key, by in self.table.items() for s in by.values()}

    def run(self) -> dict:
        """Run until nothing moves; rank -> the step it is left waiting in ({}: none)."""
        while any([self._host(r) for r in self.steps] + [self._kernel(r) for r in self.steps]):
            pass
        out = {r: q[0] for r, q in self.queue.items() if q}
        out.update({r: ss[self.host[r]] for r, ss in self.steps.items()
                    if r not in out and self.host[r] < len(ss)})
        return out

    def partners(self, s) -> list:
        if s.collective:
            key = self.number[id(s)]
            members = _members(s, self.runs)
            return [self.table[key].get(m) for m in sorted(members) if m != s.rank]
        return [self.step_of.get(id(self.pairs[id(c)])) for c in s.calls]

    def _host(self, r) -> bool:
        ss, at = self.steps[r], self.host[r]
        if at >= len(ss):
            return False
        s = ss[at]
        if s.comm is None:                     # gloo: a blocking call waits for its peers
            if s.blocks and not all(p is not None and self.host[p.rank] >= p.index
                                    for p in self.partners(s)):
                return False
        elif id(s) not in self.issued:
            if s.creates and s.comm not in self.made:
                if not all(self._creating(m, s.comm) for m in _members(s, self.runs)):
                    return False
                self.made.add(s.comm)
            self.issued.add(id(s))
            self.queue[r].append(s)
            if s.blocks:
                return True
        elif not (s.blocks and id(s) in self.done):
            return False
        self.host[r] += 1
        return True

    def _creating(self, rank, comm) -> bool:
        ss, at = self.steps.get(rank, []), self.host.get(rank, 0)
        return at < len(ss) and ss[at].comm == comm and ss[at].creates

    def _kernel(self, r) -> bool:
        q = self.queue[r]
        if not q or not all(self._running(p) for p in self.partners(q[0])):
            return False
        self.done.add(id(q.pop(0)))
        return True

    def _running(self, p) -> bool:
        return p is not None and (id(p) in self.done or (
            bool(self.queue[p.rank]) and self.queue[p.rank][0] is p))

    def waits_for(self, s) -> list:
        return sorted({p.rank for p in self.partners(s) if p is not None and not (
            id(p) in self.done or self._running(p))} or
            ({m for m in _members(s, self.runs) if not self._creating(m, s.comm)}
             if s.creates and s.comm not in self.made else set()))


def order_findings(runs, nccl_pairs, gloo_pairs, hung: bool) -> list:
    """Ranks that would wait for each other on NCCL through a collective, a barrier or a CPU
    group's call (`nccl_pairs`: NCCL's order pairing; `gloo_pairs`: the CPU groups')."""
    if hung:
        return []          # the hang itself is the finding
    cpu, eager_ = cpu_groups(runs), eager(runs)
    pairs = {k: v for k, v in nccl_pairs.items() if v.group not in cpu}
    pairs.update({k: v for k, v in gloo_pairs.items() if v.group in cpu})
    steps = {r: _steps(run, pairs, cpu, eager_) for r, run in runs.items()}
    machine = _Machine(runs, steps, pairs)
    stuck = machine.run()
    if not any(s.collective or s.comm is None for s in stuck.values()):
        return []          # point-to-point only: streams.py and communicators.py say it
    return [_finding(machine, stuck)]


def _op(c) -> str:
    return c.describe().replace(" (batch_isend_irecv)", "")


def _what(machine, s) -> str:
    c, ranks = s.first, machine.waits_for(s)
    what = (f"its batch_isend_irecv ({'; '.join(_op(x) for x in s.calls)})"
            if c.batch is not None else c.describe())
    peers = f" for rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
    if s.comm is None:
        how = " (on the CPU group, gloo)"
    elif s.creates and s.comm not in machine.made:
        how = " (its communicator is made at this first call, with every member)"
    else:
        how = " (queued first on its GPU)"
    return f"rank {s.rank} waits in {what}{how}{peers if ranks else ''}"


def _finding(machine, stuck) -> Finding:
    ranks = tuple(sorted(stuck))
    # a send may complete into NCCL's buffers before its receive: such a wait may pass
    may_pass = any(s.comm is not None and not s.collective and id(s) in machine.issued
                   and all(c.kind == "send" for c in s.calls) for s in stuck.values())
    size = "for messages larger than NCCL's buffers" if may_pass else "at any message size"
    words = "; ".join(_what(machine, stuck[r]) for r in ranks)
    lazy = [s for s in stuck.values() if s.comm is not None and (
        s.comm[0] == "pair" or (s.creates and s.comm not in machine.made))]
    mode = (" Without device_id a communicator is made at its first call, with every member "
            "(each pair's own for ungrouped sends and receives): the host waits there."
            if lazy else "")
    fix = " (or pass device_id to init_process_group)" if lazy else ""
    across = ("NCCL and a CPU group" if any(s.comm is None for s in stuck.values())
              else "collectives and point-to-point calls")
    return Finding(
        "communicator_order", f"ranks {', '.join(map(str, ranks))} would wait for each other "
        f"across {across}", ranks,
        [(r, stuck[r].first.where) for r in ranks],
        "fine on gloo (observed in this run: gloo runs each call on the CPU as it comes)",
        f"a hang {size}: {words}. Each rank's NCCL calls run on its GPU in the order it issued "
        f"them, and NCCL requires calls on different communicators in the same order on every "
        f"rank.{mode} Issue the collectives, barriers, CPU-group calls and batches in the "
        f"same order on every rank{fix}", SOURCE + (f"; {LAZY_SOURCE}" if lazy else ""), True)
