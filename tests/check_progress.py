"""`make check` fails fast, then completes: the order of an exercise's runs, and what it says.

Each exercise's grader (a test function, its runs one per world size) is graded at its fast
world sizes first (the smallest it has and 5, every case: a fold, a rank that sits out), then
at the others. A failure is said the moment it is found, the learner's file:line first; else
"right at 1 and 5; grading 2, 3, 4, 6, 7, 8 ...", with a live progress line on a terminal (a
plain line when not), then the verdict. The first failing run ends its exercise's grading
(tests/check.py skips the rest, as after a hang), so "solved" still means every run passed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from labs.harness.grading.sheet import Graded, first_problem

FAST = 5          # beside the smallest: not a power of two, one rank sits out of a fold


def family(nodeid: str) -> str:
    """A grader test without its parameters: its runs at every world size."""
    return nodeid.split("[", 1)[0]


def fast_sizes(sizes) -> set:
    """The world sizes graded first, of those a grader has."""
    have = [s for s in sizes if s is not None]
    return {min(have), *([FAST] if FAST in have else [])} if have else set()


def fail_fast_order(items, lesson_of, world_size_of) -> list:
    """`items` in lesson order, each grader's runs together, its fast world sizes first
    (runs without a world size count as fast), then the others in ascending order."""
    position, sizes = {}, {}
    for i, item in enumerate(items):
        position.setdefault(family(item.nodeid), i)
        sizes.setdefault(family(item.nodeid), []).append(world_size_of(item))
    fast = {name: fast_sizes(have) for name, have in sizes.items()}

    def key(pair):
        i, item = pair
        name, size = family(item.nodeid), world_size_of(item)
        later = size is not None and size not in fast[name]
        return lesson_of(item), position[name], later, size or 0, i
    return [item for _, item in sorted(enumerate(items), key=key)]


@dataclass
class Exercise:
    """One grader's runs this session, as the progress line tells them."""

    label: str                    # "05 ring         ring_all_reduce"
    nodeids: list                 # in the order they run
    fast: set                     # world sizes graded first
    rest: list                    # the others, ascending
    place: str = ""               # the exercise's def line, where a problem has none
    started: float | None = None
    done: list = field(default_factory=list)       # Graded, as reported
    failed: bool = False


class Progress:
    """Writes each exercise's lines through pytest's terminal reporter."""

    def __init__(self, reporter):
        self.reporter = reporter
        self.live = bool(reporter is not None and reporter.isatty())
        self.exercises: dict = {}         # family -> Exercise
        self._width = 0                   # of the live line now shown

    def plan(self, items, label_of, world_size_of, place_of):
        for item in items:
            name = family(item.nodeid)
            if name not in self.exercises:
                self.exercises[name] = Exercise(label_of(item), [], set(), [],
                                                place_of(item))
            self.exercises[name].nodeids.append(item.nodeid)
        for name, ex in self.exercises.items():
            sizes = [world_size_of(i) for i in items if family(i.nodeid) == name]
            ex.fast = fast_sizes(sizes)
            ex.rest = sorted(s for s in sizes if s is not None and s not in ex.fast)

    def start(self, nodeid):
        ex = self.exercises.get(family(nodeid))
        if ex is not None and ex.started is None:
            ex.started = time.perf_counter()
            self._show(f"{ex.label}  grading at {_listed(ex.fast) or 'its cases'} ...")

    def result(self, nodeid, graded: Graded):
        ex = self.exercises.get(family(nodeid))
        if ex is None:
            return
        ex.done.append(graded)
        if graded.kind == "failing" and not ex.failed:
            ex.failed = True
            self._failure(ex, graded)
        elif not ex.failed and len(ex.done) == len(ex.nodeids):
            self._verdict(ex)
        elif not ex.failed and ex.rest:
            self._progress(ex)

    def _failure(self, ex, graded):
        where = f" at world size {graded.world_size}" if graded.world_size else ""
        left = len(ex.nodeids) - len(ex.done)
        rest = f"; {left} run(s) not graded (a failure ends its grading)" if left else ""
        self._show(f"{ex.label}  FAILING{where}{rest}, {self._seconds(ex)}", end=True)
        for line in first_problem(graded, ex.place).splitlines():
            self._line(" " * 6 + line)

    def _progress(self, ex):
        graded = {g.world_size for g in ex.done}
        if not ex.fast <= graded:
            return
        if any(g.kind != "solved" for g in ex.done):
            return               # not started or waiting: the verdict says which
        head = f"{ex.label}  right at {_listed(ex.fast)}; grading {', '.join(map(str, ex.rest))} ..."
        done = [s for s in ex.rest if s in graded]
        if not done:
            self._show(head, end=not self.live)      # the plain line, once
        elif self.live:
            self._show(f"{head} {len(done)} of {len(ex.rest)} done, {self._seconds(ex)}")

    def _verdict(self, ex):
        kinds = {g.kind for g in ex.done}
        verdict = "solved" if kinds == {"solved"} else "/".join(sorted(kinds - {"solved"}))
        sizes = [g.world_size for g in ex.done if g.world_size is not None]
        at = f" (every run, world sizes {_listed(sorted(sizes))})" if sizes else ""
        self._show(f"{ex.label}  {verdict.replace('_', ' ')}{at}, {self._seconds(ex)}",
                   end=True)

    @staticmethod
    def _seconds(ex) -> str:
        return f"{time.perf_counter() - (ex.started or time.perf_counter()):.1f} s"

    def _show(self, text, end=False):
        """The live line (rewritten in place on a terminal); `end`: the line is final."""
        if self.reporter is None:
            return
        if not self.live:
            if end:
                self._line(text)
            return
        self.reporter.write("\r" + text.ljust(self._width), flush=True)
        self._width = 0 if end else len(text)
        if end:
            self.reporter.write("\n", flush=True)

    def _line(self, text):
        if self.reporter is not None:
            self.reporter.write_line(text)


def _listed(sizes) -> str:
    sizes = sorted(sizes)
    return ", ".join(map(str, sizes[:-1])) + f" and {sizes[-1]}" if len(sizes) > 1 else \
        "".join(map(str, sizes))
