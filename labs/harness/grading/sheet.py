"""`make check`'s grade sheet: one line per exercise, in lesson order, read in five seconds.

    solved        every run of its grader passed (one run per world size or case group)
    not started   its stub still raises NotImplementedError
    waiting       it is written, but it needs another exercise that is not solved yet
    FAILING       you wrote it and a run fails: the first failure, on one line

tests/conftest.py builds it from pytest's reports and prints it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

GRADERS = "tests/graders/"
_PREFIX = re.compile(r"^\S*GradeFailure: ")
_NOT_STARTED = re.compile(r"(\w+) is not implemented yet")
_WAITS = re.compile(r" calls (\w+) \((\S+)\), which is not solved yet")
WIDTH = 200       # a failure's reason is cut to this many characters: details are one command away


@dataclass
class Row:
    lesson: str            # "05"
    module: str            # "ring"
    exercise: str
    status: str = "solved"
    reason: str = ""


@dataclass
class Sheet:
    rows: list = field(default_factory=list)

    @property
    def failing(self) -> list:
        return [r for r in self.rows if r.status == "FAILING"]

    def lines(self) -> list[str]:
        out, lesson = [], None
        for row in self.rows:
            head = f"{row.lesson} {row.module}" if row.lesson != lesson else ""
            lesson = row.lesson
            reason = row.reason if len(row.reason) <= WIDTH else row.reason[:WIDTH - 3] + "..."
            if reason and not reason.startswith(row.exercise):
                reason = f"{row.exercise}: {reason}"     # else the reason names it already
            out.append(f"{head:<16}{row.status:<13}{reason or row.exercise}")
        counts = {s: sum(r.status.startswith(s) for r in self.rows)
                  for s in ("solved", "FAILING", "not started", "waiting")}
        out.append("")
        out.append(f"{counts['solved']} of {len(self.rows)} exercises solved, "
                   f"{counts['FAILING']} failing, {counts['not started']} not started"
                   + (f", {counts['waiting']} waiting for another exercise"
                      if counts["waiting"] else "") + ". Solved = every run of its grader passes.")
        first = (self.failing or [r for r in self.rows if r.status != "solved"] or [None])[0]
        module = first.module if first else "<lesson>"
        out.append(f"Details for one lesson: .venv/bin/python -m pytest --impl=labs "
                   f"{GRADERS}test_{module}.py")
        return out


def grade_sheet(stats: dict, exercises: list, broken: dict, grades: dict) -> Sheet:
    """`stats`: pytest's terminal reporter stats; `exercises`: (lesson, module, name) in
    lesson order; `broken`: module -> (lesson, why) for lab modules that do not import;
    `grades`: test node id -> the exercises it grades (when its name does not say)."""
    by_module: dict = {}
    for key in ("passed", "failed", "error"):
        for report in stats.get(key, []):
            nodeid = getattr(report, "nodeid", "")
            if nodeid.startswith(GRADERS) and getattr(report, "when", "call") in ("call", "setup",
                                                                                   "collect"):
                if key != "passed" or report.when == "call":
                    module = nodeid[len(GRADERS):].split(".py", 1)[0].removeprefix("test_")
                    by_module.setdefault(module, []).append((report, _reason(report)))
    sheet = Sheet()
    for module, (lesson, why) in broken.items():
        if module in by_module:
            sheet.rows.append(Row(lesson, module, f"labs/{module}.py", "FAILING",
                                  f"labs/{module}.py does not load: {why}"))
    for lesson, module, name in exercises:
        mine = [(r, why) for r, why in by_module.get(module, []) if _grades(r.nodeid, name, grades)]
        if mine:
            sheet.rows.append(_row(lesson, module, name, mine))
    sheet.rows.sort(key=lambda row: row.lesson)      # stable: exercises keep their order
    return sheet


def _grades(nodeid, name, grades) -> bool:
    if "::" not in nodeid:          # the grader file itself could not be loaded
        return True
    test = nodeid.split("::")[-1].split("[")[0]
    return name in grades.get(nodeid, ()) or test == f"test_{name}" or (
        nodeid not in grades and name in test)


def _row(lesson, module, name, reports) -> Row:
    row = Row(lesson, module, name)
    failures = [why for report, why in reports if not report.passed]
    if not failures:
        return row
    started = [why for why in failures if not _NOT_STARTED.search(why) and not _WAITS.search(why)]
    if started:
        row.status, row.reason = "FAILING", started[0]
        return row
    if any(name in _NOT_STARTED.findall(why) for why in failures):
        row.status = "not started"
        return row
    found = _WAITS.search(failures[0])
    other = f"{found[1]} ({found[2]})" if found else _NOT_STARTED.search(failures[0])[1]
    row.status, row.reason = "waiting", f"needs {other}, which is not solved yet"
    return row


def _reason(report) -> str:
    """The first line of why a report failed, without the exception's module path."""
    if report.passed:
        return ""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:
        lines = [ln[1:].strip() for ln in str(report.longrepr).splitlines() if ln.startswith("E ")]
        text = lines[-1] if lines else str(report.longrepr).strip().splitlines()[-1]
        if report.when == "collect":
            text = f"the grader could not be loaded: {text}"
    return _PREFIX.sub("", text).splitlines()[0] if text else "failed"
