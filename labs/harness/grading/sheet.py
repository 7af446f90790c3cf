"""`make check`'s grade sheet: one line per exercise, in lesson order, read in five seconds.

    solved        every run of its grader passed (one run per world size or case group)
    not started   its stub still raises (labs.harness.ranks.exercises.ExerciseNotSolved)
    waiting       it is written, but it needs another exercise that is not solved yet
    FAILING       you wrote it and a run fails: the first failure, on one line

The sheet reads types, not sentences: each grader run is a `Graded` (what the run grades,
by exercise name, and the state the grader found: GradeFailure's `kind`, `unsolved`,
`needs`), which tests/conftest.py takes from the test report (`report.user_properties`)
or from what `make check` remembers (labs.harness.grading.memory).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

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

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("remembered")
        return data

    @classmethod
    def from_dict(cls, data: dict, remembered: bool = False) -> Graded:
        return cls(data["nodeid"], tuple(data["exercises"]), data.get("kind", "failing"),
                   data.get("reason", ""), tuple(data.get("unsolved", ())),
                   tuple(dict(n) for n in data.get("needs", ())), remembered)

    @property
    def module(self) -> str:
        """'ring' for tests/graders/test_ring.py."""
        return self.nodeid.removeprefix(GRADERS).split(".py", 1)[0].removeprefix("test_")


def graded_from_failure(nodeid: str, exercises, exc: BaseException | None,
                        reason: str = "") -> Graded:
    """A test's outcome from the exception it raised (None: it passed). A GradeFailure
    says what state it found; any other exception is a failure of the body or the grader."""
    if exc is None:
        return Graded(nodeid, tuple(exercises))
    kind = getattr(exc, "kind", "failing")
    return Graded(nodeid, tuple(exercises), kind if kind in ("not_started", "waiting")
                  else "failing", reason or str(exc),
                  tuple(u.exercise for u in getattr(exc, "unsolved", ())),
                  tuple(u.as_dict() for u in getattr(exc, "needs", ())))


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

    @property
    def failing(self) -> list:
        return [r for r in self.rows if r.status == "FAILING"]

    def lines(self) -> list[str]:
        out, lesson = [], None
        for row in self.rows:
            head = f"{row.lesson} {row.module}" if row.lesson != lesson else ""
            lesson = row.lesson
            reason = _first_line(row.reason)
            reason = reason if len(reason) <= WIDTH else reason[:WIDTH - 3] + "..."
            if reason and not reason.startswith(row.exercise):
                reason = f"{row.exercise}: {reason}"     # else the reason names it already
            out.append(f"{head:<16}{row.status:<13}{reason or row.exercise}"
                       + (REMEMBERED if row.remembered else ""))
            if self.lesson and row.status in ("FAILING", "waiting"):
                details = [line for problem in row.problems for line in problem.splitlines()]
                if details and details[0] == _first_line(row.reason) and \
                        len(details[0]) <= WIDTH:
                    details = details[1:]              # the row says it already, in full
                out += [" " * 16 + "  " + line for line in details]
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
            first = (self.failing or [r for r in self.rows if r.status != "solved"] or [None])[0]
            lesson = first.lesson if first else "NN"
            out.append(f"Details for one lesson (every problem, once): make check LESSON={lesson}")
        return out


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def grade_sheet(graded: list, exercises: list, broken: dict, lesson: str = "") -> Sheet:
    """`graded`: Graded runs (this session's and remembered ones); `exercises`: (lesson,
    module, name) in lesson order; `broken`: module -> (lesson, why) for lab modules that do
    not import; `lesson`: "05" for one lesson's sheet with its details."""
    by_module: dict = {}
    for g in graded:
        by_module.setdefault(g.module, []).append(g)
    sheet = Sheet(lesson=lesson)
    for module, (number, why) in broken.items():
        if module in by_module:
            sheet.rows.append(Row(number, module, f"labs/{module}.py", "FAILING",
                                  f"labs/{module}.py does not load: {why}"))
    for number, module, name in exercises:
        mine = [g for g in by_module.get(module, []) if name in g.exercises]
        if mine:
            sheet.rows.append(_row(number, module, name, mine))
    sheet.rows.sort(key=lambda row: row.lesson)      # stable: exercises keep their order
    return sheet


def _row(lesson, module, name, runs) -> Row:
    row = Row(lesson, module, name, remembered=all(g.remembered for g in runs))
    failing = [g for g in runs if g.kind == "failing"]
    if failing:
        row.status, row.reason = "FAILING", failing[0].reason
        row.problems = _distinct(g.reason for g in failing)
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
    row.problems = _distinct(g.reason for g in unsolved)
    return row


def _distinct(reasons) -> list[str]:
    """Each distinct failure once: the same problem in several runs (world sizes) is the
    first run's message, then how many other runs showed it."""
    found: dict = {}
    for reason in (r.strip() for r in reasons):
        if reason:
            found.setdefault(problem_kind(_first_line(reason)), []).append(reason)
    return [same[0] + (f"\n[the same in {len(same) - 1} more run(s) of its grader]"
                       if len(same) > 1 else "") for same in found.values()]
