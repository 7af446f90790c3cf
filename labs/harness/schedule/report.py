"""`check(schedule)`: simulate, find every problem, and say it in a `Report`."""
from __future__ import annotations

from labs.harness.schedule.deadlock import stuck_analysis
from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.program import Schedule, as_schedule
from labs.harness.schedule.simulation import Simulation
from labs.harness.schedule.verdicts import (buffer_verdicts, call_verdicts, final_matching,
                                            lonely_verdicts, nccl_first_batch_verdicts,
                                            warning_verdicts)

# How verdicts are listed: what stops the run first, then what corrupts data, then warnings.
_ORDER = ["deadlock", "double_wait", "self", "bad_peer", "any_source", "size_mismatch",
          "tag_mismatch",
          "unmatched_send", "unmatched_recv", "unmatched_collective", "dtype_mismatch",
          "unwaited", "any_source_race", "nccl_first_batch"]


class Report:
    """What `check` predicts. `print(report)` for people; for code:
    `.outcome` ("ok", "silent", "hang", "error" or "abort"; "undefined" on NCCL),
    `.verdicts` (list of `Verdict`),
    `.kinds` (set of verdict kinds), `.pairs` (list of (send P2P, recv P2P)), `.cycles`
    (tuples of ranks), `.stuck` (rank -> what it waits in), `.steps` (the simulation),
    `.nccl` (the same schedule under NCCL's rules, modelled)."""

    def __init__(self, schedule: Schedule, sim: Simulation, matching: dict, verdicts: list,
                 stuck: dict, cycles: list, outcome: str, backend: str):
        self.schedule, self.sim, self.backend = schedule, sim, backend
        self.matching, self.verdicts, self.stuck = matching, verdicts, stuck
        self.cycles, self.outcome, self.steps = cycles, outcome, sim.steps
        ops = schedule.ops
        self.pairs = [(ops[s], ops[q]) for s, q in sorted(matching.items()) if ops[s].send]
        self.nccl: Report | None = None
        self.send_cycle = False

    @property
    def kinds(self) -> set:
        return {v.kind for v in self.verdicts}

    def by_kind(self, kind) -> list:
        return [v for v in self.verdicts if v.kind == kind]

    def summary(self) -> str:
        """One line: 'hang: deadlock (ranks 0, 1)'."""
        problems = [v for v in self.verdicts if v.outcome != Outcome.WARNING] or self.verdicts
        what = ", ".join(dict.fromkeys(
            f"{v.kind} (rank{'s' if len(v.ranks) > 1 else ''} {', '.join(map(str, v.ranks))})"
            for v in problems))
        small = " (small sends may pass)" if self.backend == "nccl" and self.send_cycle else ""
        return f"{self.outcome}" + (f": {what}" if what else "") + small

    def __str__(self):
        lines = [f"Schedule on {self.schedule.world_size} ranks (each rank's calls, in order):",
                 *self.schedule.lines(), "",
                 "Matching (FIFO per (source, destination, tag), as gloo matches):"
                 if self.backend == "gloo" else "Matching (FIFO per (source, destination); "
                 "NCCL ignores tags):"]
        for s, q in self.pairs:
            moved = s.id in self.sim.completed
            lines.append(f"  {s.where()} -> {q.where()}" + ("" if moved else
                                                              "   (never reached)"))
        if not self.pairs:
            lines.append("  (no send matches any receive)")
        lines.append("")
        lines.append(f"Prediction on {self.backend}: {self.outcome.shown}")
        for r, text in sorted(self.stuck.items()):
            lines.append(f"  rank {r} waits forever in {text}")
        lines += [str(v) for v in self.verdicts]
        if self.nccl is not None:
            lines += ["", "On NCCL (modelled, not run: tags ignored, send/recv to self only as "
                          "a pair in one batch, no any-source receive):",
                      f"  {self.nccl.summary()}"]
            said = any("may buffer" in v.nccl for v in self.verdicts)
            if self.nccl.send_cycle and not said:
                lines.append("  (NCCL may buffer a small send, so a cycle of sends can "
                             "complete there for small messages and hang for large ones.)")
            lines += [str(v) for v in self.nccl.verdicts if v.kind == "nccl_first_batch"]
        return "\n".join(lines)

    def __repr__(self):
        return f"<Report {self.summary()}>"

    def steps_text(self) -> str:
        return "\n".join(f"{s.n:3d}. {s.text}" for s in self.steps)



def check(schedule, backend: str = "gloo") -> Report:
    """Predict what `schedule` does, without starting a worker. See the package docstring.

    backend="nccl" applies NCCL's rules instead (modelled, not run: tags ignored, send/recv
    to self allowed only as a matched pair inside one call or batch (else ncclInvalidUsage:
    the call raises), no any-source receive, sizes not checked). A gloo report carries the
    NCCL one as `report.nccl` and says, verdict by verdict, what would differ."""
    if backend not in ("gloo", "nccl"):
        raise ValueError("backend must be 'gloo' or 'nccl'")
    sched = as_schedule(schedule)
    nccl = check(sched, backend="nccl") if backend == "gloo" else None
    sim = Simulation(sched, backend).run()
    matching = final_matching(sched, sim)
    verdicts = call_verdicts(sched, sim, backend)
    excluded = {v.ops[0] for v in verdicts}
    verdicts += buffer_verdicts(sched, sim, matching)
    verdicts += lonely_verdicts(sched, sim, matching, backend, excluded)
    stuck, stuck_verdicts, cycles, send_cycle = stuck_analysis(sched, sim, matching, backend,
                                                               nccl)
    verdicts += stuck_verdicts
    verdicts += warning_verdicts(sched, sim, matching, backend)
    if backend == "nccl":
        verdicts += nccl_first_batch_verdicts(sched)
    failures = [kind for kind, _, _ in sim.failure.values()]
    reached = {v.outcome for v in verdicts if v.reached}
    outcome = (Outcome.ABORT if Outcome.ABORT in failures else Outcome.ERROR if failures else
               Outcome.HANG if stuck else Outcome.UNDEFINED if Outcome.UNDEFINED in reached
               else Outcome.SILENT if Outcome.SILENT in reached else Outcome.OK)
    verdicts.sort(key=lambda v: (not v.reached, _ORDER.index(v.kind)))
    report = Report(sched, sim, matching, verdicts, stuck, cycles, outcome, backend)
    report.nccl, report.send_cycle = nccl, send_cycle
    return report
