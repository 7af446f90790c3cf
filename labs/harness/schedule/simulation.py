"""The simulation: every rank runs its program; a pair of ops completes when both are posted.

Gloo's rule: a send completes only once its receive is posted (a rendezvous, never
buffered). Receives match sends FIFO per (source, destination, tag); NCCL ignores tags.
NCCL (modelled): a send to self and a receive from self are allowed only as a pair inside
one call or batch; one without its partner makes the whole call raise (ncclInvalidUsage).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.program import Schedule, unpaired_self_ops

@dataclass
class SimulationStep:
    n: int
    rank: int | None
    text: str


class Simulation:
    """Step-by-step execution of a schedule under one backend's matching rules."""

    def __init__(self, sched: Schedule, backend: str):
        self.s, self.backend = sched, backend
        self.ranks = range(sched.world_size)
        self.pc = {r: 0 for r in self.ranks}
        self.state = {r: "running" for r in self.ranks}     # running | done | failed
        self.failure = {}            # rank -> (kind, op id, message)
        self.started, self.finished = {}, {}    # (rank, index) -> step
        self.posted, self.completed = {}, {}    # op id -> step
        self.partner = {}            # op id -> op id, both directions
        self.pending_sends, self.pending_recvs = [], []     # posted, unmatched, post order
        self.arrivals = defaultdict(dict)        # collective k -> {rank: name}
        self.coll_of = {}            # (rank, index) -> k
        self.ncoll = {r: 0 for r in self.ranks}
        self.steps: list[SimulationStep] = []
        self.unpaired_self = unpaired_self_ops(sched) if backend == "nccl" else set()

    def log(self, rank, text):
        self.steps.append(SimulationStep(len(self.steps), rank, text))

    @property
    def now(self):
        return len(self.steps)

    def run(self):
        progress = True
        while progress:
            progress = False
            for r in self.ranks:
                if self.state[r] == "running" and self._advance(r):
                    progress = True
        return self

    # -- one rank takes one step ------------------------------------------------------
    def _advance(self, r) -> bool:
        """One step of rank `r`: finish its program, start its next call, or return from
        the call it is in. False: it cannot move now."""
        prog = self.s.instrs[r]
        if self.pc[r] >= len(prog):
            self.state[r] = "done"
            self.log(r, f"rank {r} has finished its program")
            return True
        ins = prog[self.pc[r]]
        key = (r, ins.index)
        if key not in self.started:
            self._start(r, ins, key)
            return True
        if self._done(ins):
            self.finished[key] = self.now
            self.pc[r] += 1
            self.log(r, f"rank {r} returns from {ins.text}")
            return True
        return False

    def _start(self, r, ins, key) -> None:
        """Rank `r` enters call `ins`: post its ops, join its collective, return at once
        if nothing in it needs to wait."""
        self.started[key] = self.now
        notes = []
        lone = [pid for pid in ins.post if pid in self.unpaired_self]
        if lone:
            p = self.s.ops[lone[0]]
            for pid in ins.post:
                self.posted[pid] = self.now
            self._fail(r, "self", lone[0], f"rank {r} calls {ins.text}: {p.op!r} "
                       f"{'sends to' if p.send else 'receives from'} itself without the "
                       f"matching {'receive from' if p.send else 'send to'} itself in the "
                       f"same call: NCCL rejects the group (ncclInvalidUsage), the call "
                       f"raises")
            return
        for pid in ins.post:
            note = self._post(pid)
            if self.state[r] != "running":
                return
            notes.append(note)
        if ins.collective:
            k = self.ncoll[r]
            self.ncoll[r] += 1
            self.coll_of[key] = k
            self.arrivals[k][r] = ins.collective
        if self._done(ins):
            self.finished[key] = self.now
            self.pc[r] += 1
            self.log(r, self._describe_call(r, ins, notes, returned=True))
        else:
            self.log(r, self._describe_call(r, ins, notes, returned=False))

    def _describe_call(self, r, ins, notes, returned):
        if ins.compute:
            return f"rank {r} computes '{ins.compute.label}' (no communication)"
        if ins.collective:
            return f"rank {r} enters {ins.text}" + (
                ": every rank is there, it returns" if returned else
                ": it waits until every rank enters it")
        head = f"rank {r} {'posts' if ins.post and not ins.wait else 'calls'} {ins.text}"
        done = [n for n in notes if n]
        tail = ("; " + "; ".join(done)) if done else ""
        if ins.rewait and self.backend == "gloo":
            tail += ("; an earlier wait already consumed that completion, so it blocks "
                     "until the timeout")
        elif ins.wait and not returned:
            tail += "; it blocks until " + self._missing(ins)
        elif ins.wait:
            tail += "; it returns at once" if ins.post else ": already complete, it returns"
        return head + tail

    def _missing(self, ins):
        by_peer = defaultdict(list)
        for pid in ins.wait:
            if pid not in self.completed:
                p = self.s.ops[pid]
                by_peer[p.peer].append(p)
        parts = []
        for peer, ps in by_peer.items():
            who = "a sender" if peer is None else f"rank {peer}"
            other = "receive" if ps[0].send else "send"
            which = (ps[0].op.arrow if len(ps) == 1 else
                     ", ".join(f"{p.op.arrow} [#{p.index}]" for p in ps))
            parts.append(f"{who} posts the {other}{'s' if len(ps) > 1 else ''} matching {which}")
        return " and ".join(parts)

    def _done(self, ins) -> bool:
        if ins.collective:
            k = self.coll_of.get((ins.rank, ins.index))
            return k is not None and len(self.arrivals[k]) == self.s.world_size
        if ins.rewait and self.backend == "gloo":
            return False
        return all(pid in self.completed for pid in ins.wait)

    # -- posting and matching -----------------------------------------------------------
    def _fail(self, r, kind, pid, message):
        self.state[r] = "failed"
        self.failure[r] = (kind, pid, message)
        self.pending_sends = [q for q in self.pending_sends if self.s.ops[q].rank != r]
        self.pending_recvs = [q for q in self.pending_recvs if self.s.ops[q].rank != r]
        self.log(r, message)

    def _tag_ok(self, a, b) -> bool:
        return self.backend == "nccl" or a.tag == b.tag      # NCCL ignores tags

    def _post(self, pid) -> str:
        p, ops = self.s.ops[pid], self.s.ops
        r = p.rank
        self.posted[pid] = self.now
        if p.peer is not None and not 0 <= p.peer < self.s.world_size:
            self._fail(r, "bad_peer", pid, f"rank {r} calls {p.op!r}: rank {p.peer} does not "
                       f"exist (world size {self.s.world_size}): the call raises")
            return ""
        if p.peer == r and self.backend == "gloo":
            self._fail(r, "self", pid, f"rank {r} calls {p.op!r} with itself as the peer: "
                       f"gloo raises at the call (no pair to itself)")
            return ""
        if p.peer is None and self.backend == "nccl":
            self._fail(r, "any_source", pid, f"rank {r} calls {p.op!r}: NCCL has no "
                       f"any-source receive: the call raises")
            return ""
        if p.send:
            found = next((q for q in self.pending_recvs if ops[q].rank == p.peer
                          and ops[q].peer in (r, None) and self._tag_ok(p, ops[q])), None)
        else:
            found = next((q for q in self.pending_sends if ops[q].peer == r
                          and (p.peer is None or ops[q].rank == p.peer)
                          and self._tag_ok(p, ops[q])), None)
        if found is None:
            (self.pending_sends if p.send else self.pending_recvs).append(pid)
            return ""
        (self.pending_recvs if p.send else self.pending_sends).remove(found)
        return self._pair(*((pid, found) if p.send else (found, pid)), poster=pid)

    def _pair(self, s, q, poster) -> str:
        ops = self.s.ops
        self.partner[s], self.partner[q] = q, s
        other = ops[q] if poster == s else ops[s]
        note = (f"{ops[poster].op.arrow} matches rank {other.rank}'s {other.op.arrow} "
                f"[#{other.index}]")
        if self.backend == "gloo" and ops[q].nbytes < ops[s].nbytes:
            self.completed[s] = self.now
            self._fail(ops[q].rank, Outcome.ABORT, q,
                       f"rank {ops[q].rank}'s receive buffer {ops[q].op!r} ({ops[q].nbytes} bytes) "
                       f"is smaller than rank {ops[s].rank}'s message ({ops[s].nbytes} bytes): "
                       f"gloo aborts rank {ops[q].rank} (SIGABRT)")
            return note + " (size check fails)"
        self.completed[s] = self.completed[q] = self.now
        return note + ": the data moves, both complete"
