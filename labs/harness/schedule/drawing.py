"""Pictures of a schedule: ranks as lanes, calls in program order, matched pairs as arrows.

    from labs.harness.schedule.drawing import draw, step_through
    draw(schedule, report)        # the prediction, the deadlock cycle in red
    step_through(schedule)        # a slider over the simulation's steps

Notebook side only (matplotlib, ipywidgets): the worker side of the checker never
imports this module.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch

from labs.harness.notebook.plots import OP_COLORS
from labs.harness.schedule.language import Batch
from labs.harness.schedule.outcomes import Outcome
from labs.harness.schedule.program import Schedule, as_schedule
from labs.harness.schedule.report import Report, check
from labs.harness.notebook.stepper import step_slider


def _size(sched, cells) -> tuple:
    width = max(len(row) for row in cells.values()) or 1
    return (min(2.0 + 1.25 * width, 16), 1.3 + 1.05 * sched.world_size)


def draw(schedule, report: Report | None = None, ax=None, upto: int | None = None,
         title: str | None = None):
    """Ranks as lanes, calls in program order, matched pairs as arrows, the deadlock cycle
    in red. `upto=k`: the state after simulation step k (see `step_through`)."""
    sched = as_schedule(schedule)
    report = report if report is not None else check(sched)
    cells, batches = _cells(sched)
    width = max(len(row) for row in cells.values()) or 1
    if ax is None:
        _, ax = plt.subplots(figsize=_size(sched, cells))
    picture = _Picture(sched, report, ax, upto)
    for r, row in cells.items():
        for cell in row:
            picture.call(r, *cell)
    picture.batches(batches)
    picture.pairs()
    if upto is None:
        picture.cycle()
    picture.failures()
    _frame(ax, sched.world_size, width)
    ax.set_title(textwrap.fill(_title(report, upto, title), 110), loc="left", fontsize=9)
    ax.legend(handles=_legend(), loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3,
              fontsize=7, frameon=False)
    return ax


def step_through(schedule, report: Report | None = None):
    """A slider over the simulation's steps: the picture and the text of step k.
    Returns the widget (display it); `report.steps_text()` is the same as plain text."""
    sched = as_schedule(schedule)
    report = report if report is not None else check(sched)
    steps = report.steps
    return step_slider(len(steps), lambda k, ax: draw(sched, report, ax=ax, upto=k),
                       lambda k: f"step {k}: {steps[k].text}" if steps else "no steps",
                       figsize=_size(sched, _cells(sched)[0]), value=len(steps) - 1,
                       continuous_update=False)


def _cells(sched: Schedule):
    """Per rank, the boxes to draw in program order: (x, kind, label, op id | None, instr)."""
    cells, batches = {}, []
    for r in range(sched.world_size):
        x, row = 0, []
        for ins in sched.instrs[r]:
            if ins.post:
                x0 = x
                for pid in ins.post:
                    op = sched.ops[pid].op
                    size = f"{op.numel}x{op.dtype.replace('float', 'f').replace('int', 'i')}"
                    tag = f" t{op.tag}" if op.tag else ""
                    arrow = "\u2192" if op.is_send else "\u2190"
                    peer = "any" if op.peer is None else op.peer
                    row.append((x, "send" if op.is_send else "recv",
                                f"{op.kind}{arrow}{peer}\n{size}{tag}", pid, ins))
                    x += 1
                if isinstance(ins.item, Batch):
                    batches.append((r, x0, x - 1))
            elif ins.compute:
                row.append((x, "compute", f"compute\n{ins.compute.label}", None, ins))
                x += 1
            elif ins.collective:
                row.append((x, "collective", ins.collective, None, ins))
                x += 1
            else:
                row.append((x, "wait", ins.text.replace("wait(", "wait\n(", 1), None, ins))
                x += 1
        cells[r] = row
    return cells, batches



class _Picture:
    """One drawing on `ax`: where each call's box stands, and what had happened by
    simulation step `upto` (None: the end of the simulation)."""

    def __init__(self, sched: Schedule, report: Report, ax, upto: int | None):
        self.sched, self.report, self.sim, self.ax, self.upto = sched, report, report.sim, ax, upto
        self.pos = {}           # op id, or ("i", rank, call index) -> (x, rank)
        self.cycle_ops = {pid for v in report.verdicts if v.kind == "deadlock" for pid in v.ops}
        self.problem_ops = {pid for v in report.verdicts
                            if v.kind != "deadlock" and v.outcome != Outcome.WARNING for pid in v.ops}

    def happened(self, stamps, key) -> bool:
        return key in stamps and (self.upto is None or stamps[key] <= self.upto)

    def call(self, r, x, kind, label, pid, ins):
        """One call's box, styled by how far it got and whether it is part of a problem."""
        sim = self.sim
        self.pos[pid if pid is not None else ("i", r, ins.index)] = (x, r)
        if pid is not None:
            started, done = self.happened(sim.posted, pid), self.happened(sim.completed, pid)
        else:
            started = self.happened(sim.started, (r, ins.index))
            done = self.happened(sim.finished, (r, ins.index))
        face, alpha, edge, lw, ls = OP_COLORS[kind], 0.9, "black", 0.6, "-"
        if not started:
            face, alpha, edge, ls = "white", 1.0, "#999999", "--"
        elif not done:
            alpha = 0.35
        if pid in self.cycle_ops and self.upto is None:
            edge, lw = "red", 2.6
        elif pid in self.problem_ops and started:
            edge, lw = "darkorange", 2.4
        if self.blocked_forever(r, pid, ins):
            in_cycle = r in {v for c in self.report.cycles for v in c}
            edge, lw = ("red" if in_cycle else "darkorange", 2.6)
        self.ax.add_patch(FancyBboxPatch((x - 0.38, r - 0.3), 0.76, 0.6,
                                         boxstyle="round,pad=0.02",
                                         facecolor=to_rgba(face, alpha), edgecolor=edge,
                                         linewidth=lw, linestyle=ls))
        self.ax.text(x, r, label, ha="center", va="center", fontsize=7,
                     color="#777777" if not started else "black")

    def blocked_forever(self, r, pid, ins) -> bool:
        """The call rank r is stuck in at the end (outside a deadlock cycle's own ops)."""
        sim, instrs = self.sim, self.sched.instrs[r]
        return (self.upto is None and r in self.report.stuck and sim.pc[r] < len(instrs)
                and instrs[sim.pc[r]] is ins and pid not in self.cycle_ops
                and (pid is None or pid not in sim.completed))

    def batches(self, batches):
        for r, x0, x1 in batches:
            self.ax.add_patch(FancyBboxPatch((x0 - 0.46, r - 0.4), x1 - x0 + 0.92, 0.8,
                                             boxstyle="round,pad=0.02", fill=False,
                                             edgecolor="#444444", linewidth=1.0, linestyle=":"))
            self.ax.text(x0 - 0.44, r - 0.42, "batch", fontsize=6, va="bottom", color="#444444")

    def pairs(self):
        """An arrow per matched pair: solid once the data moved, dotted before."""
        for s, q in self.report.pairs:
            if self.upto is None and (s.id in self.cycle_ops or q.id in self.cycle_ops):
                continue            # drawn by `cycle` as a red "waits for" arrow
            (xs, ys), (xq, yq) = self.pos[s.id], self.pos[q.id]
            moved = self.happened(self.sim.completed, s.id)
            dy = 0.3 if yq > ys else -0.3
            self.ax.annotate("", xy=(xq, yq - dy), xytext=(xs, ys + dy),
                             arrowprops=dict(arrowstyle="-|>", color="black" if moved else
                                             "#aaaaaa", lw=1.1, linestyle="-" if moved else ":",
                                             connectionstyle="arc3,rad=0.08" if ys != yq else
                                             "arc3,rad=0.5"))

    def cycle(self):
        """Red dashed "waits for" arrows along every deadlock cycle."""
        for v in self.report.verdicts:
            if v.kind != "deadlock":
                continue
            for pid in v.ops:
                other = self.report.matching.get(pid)
                if other is None:
                    continue
                (x0, y0), (x1, y1) = self.pos[pid], self.pos[other]
                dy = 0.3 if y1 > y0 else -0.3
                self.ax.annotate("", xy=(x1, y1 - dy), xytext=(x0, y0 + dy),
                                 arrowprops=dict(arrowstyle="-|>", color="red", lw=1.8,
                                                 linestyle="--",
                                                 connectionstyle="arc3,rad=-0.15"))

    def failures(self):
        for r, (kind, pid, _) in self.sim.failure.items():
            if pid is not None and (self.upto is None or self.sim.posted.get(pid, 0) <= self.upto):
                x, y = self.pos[pid]
                self.ax.text(x, y + 0.36, "\u2717 " + ("SIGABRT" if kind == Outcome.ABORT else "raises"),
                             ha="center", va="top", fontsize=7, color="red", fontweight="bold")


def _frame(ax, world_size, width):
    ax.set_xlim(-0.7, width - 0.3)
    ax.set_ylim(world_size - 0.4, -0.6)
    ax.set_yticks(range(world_size), [f"rank {r}" for r in range(world_size)])
    ax.set_xticks([])
    ax.set_xlabel("each rank's calls, in program order")
    for spine in ("top", "right", "bottom"):
        ax.spines[spine].set_visible(False)


def _title(report, upto, title) -> str:
    if title is not None:
        return title
    title = f"predicted on {report.backend}: {report.summary()}"
    if upto is not None and upto < len(report.steps):
        return f"step {upto}: {report.steps[upto].text}"
    return title


def _legend() -> list:
    return [Patch(facecolor=OP_COLORS["send"], label="send"),
            Patch(facecolor=OP_COLORS["recv"], label="recv"),
            Patch(facecolor=OP_COLORS["wait"], label="wait"),
            Patch(facecolor="white", edgecolor="#999999", linestyle="--", label="not reached"),
            Patch(facecolor=OP_COLORS["send"], alpha=0.35, label="posted, not complete"),
            Line2D([], [], color="black", marker=">", label="matched pair"),
            Line2D([], [], color="red", linestyle="--", marker=">", label="waits for (deadlock)"),
            Patch(facecolor="white", edgecolor="red", linewidth=2, label="blocked forever"),
            Patch(facecolor="white", edgecolor="darkorange", linewidth=2, label="problem")]
