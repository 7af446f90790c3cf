"""`make check`'s grade sheet: one line per exercise, in lesson order, read in five seconds.

    solved        every run of its grader passed (one run per world size or case group)
    not started   its stub still raises (labs.harness.ranks.exercises.ExerciseNotSolved)
    waiting       it is written, but it needs another exercise that is not solved yet
    FAILING       you wrote it and a run fails: the first failure, on one line (one lesson,
                  `make check LESSON=05`: every distinct problem once, your file:line first,
                  with the world sizes it showed at on one line)

The sheet reads types, not sentences: each grader run is a `Graded` (what the run grades,
by exercise name, and the state the grader found: GradeFailure's `kind`, `unsolved`,
`needs`), which tests/conftest.py takes from the test report (`report.user_properties`)
or from what `make check` remembers (labs.harness.grading.memory).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

from labs.harness.grading.run import problem_kind

GRADERS = "tests/graders/"
WIDTH = 200       # a failure's reason is cut to this many characters: details are one command away
REMEMBERED = "  [remembered]"


@dataclass
class Graded:
    """One grader run (a test), as the sheet reads it."""

    nodeid: str                  # "tests/graders/test_ring.py::test_ring_all_reduce[2]"
    exercises: tuple             # the exercises it grades, by name
    kind: str = "solved"         # "solved", "failing", "not_started" or "waiting"
    reason: str = ""             # the failure's message (first line first)
    unsolved: tuple = ()         # not_started: the graded exercises whose stubs still raise
    needs: tuple = ()            # waiting: ({"exercise", "file", "section"}, ...) to solve first
    remembered: bool = False     # taken from make check's memory, not run this time
    world_size: int | None = None    # the run's world size, if its grader has one
    problems: tuple = ()         # failing: each distinct problem, whole (empty: the reason)
    hung: bool = False           # failing: the run hung; "skipped": a smaller one hung

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("remembered")
        return data

    @classmethod
    def from_dict(cls, data: dict, remembered: bool = False) -> Graded:
        return cls(data["nodeid"], tuple(data["exercises"]), data.get("kind", "failing"),
                   data.get("reason", ""), tuple(data.get("unsolved", ())),
                   tuple(dict(n) for n in data.get("needs", ())), remembered,
                   data.get("world_size"), tuple(data.get("problems", ())),
                   data.get("hung", False))

    @property
    def module(self) -> str:
        """'ring' for tests/graders/test_ring.py."""
        return self.nodeid.removeprefix(GRADERS).split(".py", 1)[0].removeprefix("test_")


def graded_from_failure(nodeid: str, exercises, exc: BaseException | None,
                        reason: str = "", world_size: int | None = None) -> Graded:
    """A test's outcome from the exception it raised (None: it passed). A GradeFailure
    says what state it found; any other exception is a failure of the body or the grader."""
    if exc is None:
        return Graded(nodeid, tuple(exercises), world_size=world_size)
    kind = getattr(exc, "kind", "failing")
    return Graded(nodeid, tuple(exercises), kind if kind in ("not_started", "waiting")
                  else "failing", reason or str(exc),
                  tuple(u.exercise for u in getattr(exc, "unsolved", ())),
                  tuple(u.as_dict() for u in getattr(exc, "needs", ())),
                  world_size=world_size, problems=tuple(getattr(exc, "problems", ())),
                  hung=getattr(exc, "hung", False))


def skipped_after(nodeid: str, exercises, world_size, stopped: Graded) -> Graded:
    """A run not made: the same grader failed (or hung) in an earlier run (one is enough)."""
    how = "hung" if stopped.hung else "failed"
    return Graded(nodeid, tuple(exercises), "skipped",
                  f"not graded: it {how} at world_size={stopped.world_size}",
                  world_size=world_size, hung=stopped.hung)


def first_problem(graded: Graded, place: str = "") -> str:
    """A failing run's first problem, whole, your file:line first (`place` if it has none)."""
    problems = _distinct([replace(graded, world_size=None)], place)
    return problems[0] if problems else ""


@dataclass
class Row:
    lesson: str            # "05"
    module: str            # "ring"
    exercise: str
    status: str = "solved"
    reason: str = ""
    remembered: bool = False
    problems: list = field(default_factory=list)     # every distinct failure, for details


@dataclass
class Sheet:
    rows: list = field(default_factory=list)
    lesson: str = ""       # make check LESSON=05: only that lesson, with every problem
    recent: tuple = ()     # the lessons, their lab module most recently changed first

    @property
    def failing(self) -> list:
        return [r for r in self.rows if r.status == "FAILING"]

    def lines(self) -> list[str]:
        out, lesson = [], None
        for row in self.rows:
            head = f"{row.lesson} {row.module}" if row.lesson != lesson else ""
            lesson = row.lesson
            details = self.lesson and row.status in ("FAILING", "waiting") and row.problems
            if details and row.status == "FAILING":
                n = len(row.problems)
                reason = f"{n} problems, each once below" if n > 1 else "1 problem, below"
            else:
                reason = _first_line(row.reason)
                reason = reason if len(reason) <= WIDTH else reason[:WIDTH - 3] + "..."
            if reason and not reason.startswith(row.exercise):
                reason = f"{row.exercise}: {reason}"     # else the reason names it already
            out.append(f"{head:<16}{row.status:<13}{reason or row.exercise}"
                       + (REMEMBERED if row.remembered else ""))
            if details:
                out += [" " * 16 + "  " + line for problem in row.problems
                        for line in problem.splitlines()]
        counts = {s: sum(r.status.startswith(s) for r in self.rows)
                  for s in ("solved", "FAILING", "not started", "waiting")}
        out.append("")
        out.append(f"{counts['solved']} of {len(self.rows)} exercises solved, "
                   f"{counts['FAILING']} failing, {counts['not started']} not started"
                   + (f", {counts['waiting']} waiting for another exercise"
                      if counts["waiting"] else "") + ". Solved = every run of its grader passes.")
        if any(r.remembered for r in self.rows):
            out.append(f"{REMEMBERED.strip()}: unchanged since its last grade (your code, its "
                       f"grader and the course's machinery), so not run again; "
                       f"make check FRESH=1 grades everything again.")
        if not self.lesson:
            out.append(f"Details for one lesson (every problem, once): make check "
                       f"LESSON={self._suggested()}")
        return out

    def _suggested(self) -> str:
        """The lesson you work on (of those with an exercise you started, the one whose lab
        module changed last), if it has a problem; else the first failing one; else the one
        you work on; else the first not solved."""
        started = {r.lesson for r in self.rows if r.status != "not started"}
        working = next((lesson for lesson in self.recent if lesson in started), "")
        if any(r.status in ("FAILING", "waiting") for r in self.rows if r.lesson == working):
            return working
        if self.failing:
            return self.failing[0].lesson
        first = [r for r in self.rows if r.status != "solved"]
        return working or (first[0].lesson if first else "NN")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def grade_sheet(graded: list, exercises: list, broken: dict, lesson: str = "",
                places: dict | None = None, recent=()) -> Sheet:
    """`graded`: Graded runs (this session's and remembered ones); `exercises`: (lesson,
    module, name) in lesson order; `broken`: module -> (lesson, why[, names, needs]) for
    lab modules that do not import (names: their exercises, read from the file, each a row:
    the count stays; needs: the other lab module whose error stops this one, whose lesson
    alone fails); `lesson`: "05" for one lesson's sheet with its details; `places`:
    exercise -> "labs/ring.py:180", where a problem without a line of its own points;
    `recent`: the lessons, most recently changed first (the last line suggests one)."""
    by_module: dict = {}
    for g in graded:
        by_module.setdefault(g.module, []).append(g)
    sheet = Sheet(lesson=lesson, recent=tuple(recent))
    for module, (number, why, *more) in broken.items():
        names, needs = more if more else ((), "")
        reason = (f"needs labs/{needs}.py, which does not load ({why})" if needs else
                  f"labs/{module}.py does not load: {why}")
        for name in names or (f"labs/{module}.py",):
            sheet.rows.append(Row(number, module, name, "waiting" if needs else "FAILING",
                                  reason))
    for number, module, name in exercises:
        mine = [g for g in by_module.get(module, []) if name in g.exercises]
        if mine:
            sheet.rows.append(_row(number, module, name, mine, (places or {}).get(name, "")))
    sheet.rows.sort(key=lambda row: row.lesson)      # stable: exercises keep their order
    return sheet


def _row(lesson, module, name, runs, place="") -> Row:
    row = Row(lesson, module, name, remembered=all(g.remembered for g in runs))
    failing = [g for g in runs if g.kind == "failing"]
    if failing:
        row.status, row.reason = "FAILING", failing[0].reason
        row.problems = _distinct(failing, place)
        skipped = _cases([g for g in runs if g.kind == "skipped"])
        if skipped and row.problems:
            why = "a hang" if failing[0].hung else "a failure"
            row.problems[-1] += (f" (not graded at {', '.join(skipped)}: "
                                 f"{why} stops its grader, one is enough to fix first)")
        return row
    unsolved = [g for g in runs if g.kind in ("not_started", "waiting")]
    if not unsolved:
        return row
    if any(name in g.unsolved for g in unsolved):
        row.status = "not started"
        return row
    needs = [n for g in unsolved for n in g.needs] or [
        {"exercise": other, "file": f"labs/{module}.py"}
        for g in unsolved for other in g.unsolved if other != name]
    first = needs[0] if needs else {"exercise": "another exercise", "file": f"labs/{module}.py"}
    row.status = "waiting"
    row.reason = f"needs {first['exercise']} ({first['file']}), which is not solved yet"
    row.problems = _distinct(unsolved, place)
    return row


def _cases(runs) -> list[str]:
    """The runs' world sizes in order, or their test ids where a grader has none (one
    parametrized by dtype): a sheet prints whatever the graders produced."""
    sizes = sorted({g.world_size for g in runs if g.world_size is not None})
    others = sorted({g.nodeid.partition("[")[2].rstrip("]") or g.nodeid for g in runs
                     if g.world_size is None})
    return [str(n) for n in sizes] + others


# "labs/ring.py:190: ..." (located already) and "labs/ring.py:190 in ring_all_reduce".
_LOCATED = re.compile(r"^[\w./-]+\.py:\d+: ")
_LEARNERS_LINE = re.compile(r"\blabs/(?!harness/)[\w/]+\.py:\d+")


def _distinct(runs, place="") -> list[str]:
    """Each distinct problem once, whatever number of runs (world sizes) showed it: its
    text, your file:line first (its own, else the first of yours it names, else `place`:
    the exercise's), then the world sizes it showed at, on one line."""
    found: dict = {}
    for g in runs:
        for problem in g.problems or (g.reason,):
            problem = problem.strip()
            if not problem:
                continue
            first = _first_line(problem)
            key = problem_kind(_LOCATED.sub("", first, count=1))
            text, sizes = found.setdefault(key, [_located(problem, place), []])
            if g.world_size is not None and g.world_size not in sizes:
                sizes.append(g.world_size)
    return [text + (f"\n    at {_sizes(sizes)}" if sizes else "")
            for text, sizes in found.values()]


def _located(problem: str, place: str) -> str:
    if _LOCATED.match(problem):
        return problem
    line = _LEARNERS_LINE.search(problem)
    where = line[0] if line else place
    return f"{where}: {problem}" if where else problem


def _sizes(sizes) -> str:
    sizes = sorted(sizes)
    return f"world size{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))}"
