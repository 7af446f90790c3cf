"""`make check`, as a pytest plugin: grade your labs/, remember, print progress and the sheet.

Active when the graders grade labs/ (`--impl=labs`); tests/conftest.py registers it.

* Each grader test grades the exercises its name says (`test_<exercise>`) or its
  `grades(...)` marker lists: identity, by name. While the test runs, grade() knows them
  (labs.harness.grading.run.grading), so an unsolved exercise it grades is "not started"
  and any other one it meets is a dependency ("waiting").
* The outcome goes into the test report as data (`report.user_properties`, "grade": a
  labs.harness.grading.sheet.Graded as a dict), and the grade sheet reads that, not text.
* `--remember=FILE` (make check): a test whose key (labs.harness.grading.memory) has not
  changed since its last grade is not run again: its remembered outcome goes on the sheet,
  marked so. A test whose exercises are all untouched stubs is "not started" without
  starting workers. `--lesson=05` grades one lesson and shows every problem it has.
* Fail fast, then complete (tests/check_progress.py): each grader runs at its fast world
  sizes first, then the others; its first failing run (a hang too) stops it: the runs left
  are not made (one problem is enough to fix; each would cost seconds), the sheet says at
  which world size it failed, and the exercise is not solved.
* A lab module that does not load fails its own lesson only: its graders do not run,
  its exercises (read from the file) stay on the sheet, and a module that imports it
  waits for it.
* Progress is a line per exercise, a failure said the moment it is found (your code's line
  first); a failure's report is its message, not the grader's source.
"""
from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

from labs.harness import COURSE_ROOT
from labs.harness.launch.launcher import warm_up
from labs.harness.ranks.exercises import ExerciseNotSolved, exercises_in
from labs.harness.grading import memory, reference_cache
from labs.harness.grading.run import GradeFailure, grading
from labs.harness.grading.sheet import (GRADERS, Graded, grade_sheet, graded_from_failure,
                                        skipped_after)
from tests import course
from tests.check_progress import Progress, fail_fast_order, family

KEY = "grade"


def _module_of(nodeid: str) -> str:
    return nodeid.removeprefix(GRADERS).split(".py", 1)[0].removeprefix("test_")


class Check:
    """The plugin; one per session."""

    def __init__(self, config):
        self.config = config
        self.lesson = (config.getoption("--lesson") or "").zfill(2) if \
            config.getoption("--lesson") else ""
        path = config.getoption("--remember")
        self.memory = memory.Memory(path) if path else None
        if path and not os.environ.get(reference_cache.CACHE_ENV):
            # The reference's records, beside the grades: an edit runs only your body.
            os.environ[reference_cache.CACHE_ENV] = str(Path(path).with_name("p2p-references"))
        if path and _changed_since(Path(path)):
            warm_up()      # workers will be needed: the fork server imports torch meanwhile
        self.exercises, self.broken, self.places = _exercises()
        self.lessons = {module: number for number, module, _ in self.exercises}
        self.lessons.update({m: b[0] for m, b in self.broken.items()})
        self.stopped: dict = {}            # grader test (no parameters) -> its run that failed
        self.graded: list[Graded] = []     # this session's, remembered ones included
        self.keys: dict = {}               # nodeid -> key, for the tests that run
        self.grades: dict = {}             # nodeid -> the exercises it grades
        self.progress = None               # made once the runs are known
        self._sheet = None

    # -- what each test grades, and what need not run ---------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        kept, dropped, frames = [], [], {}
        skipped = {"lesson": 0, "stub": 0, "remembered": 0}
        for item in items:
            why = self._why_not_run(item, frames)
            if why is None:
                kept.append(item)
            else:
                dropped.append(item)
                skipped[why] += 1
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        # In lesson order (the files sort by topic): the progress lines read like the sheet.
        items[:] = fail_fast_order(kept, self._lesson_of, _world_size)
        self.progress = Progress(self.config.pluginmanager.get_plugin("terminalreporter"))
        self.progress.plan([i for i in items if i.nodeid in self.grades], self._label,
                           _world_size, self._place_of)
        self._say_plan(len(kept), skipped["remembered"], skipped["stub"])

    def _why_not_run(self, item, frames: dict) -> str | None:
        """None if the item runs; else why not: "lesson" (another lesson's, or a lab that
        does not load: the sheet says why, from self.broken), "stub" (untouched: not started)
        or "remembered" (graded before, unchanged since). Its grade is kept either way."""
        if not item.nodeid.startswith(GRADERS):
            return None
        module = _module_of(item.nodeid)
        if (self.lesson and self.lessons.get(module) != self.lesson) or module in self.broken:
            return "lesson"
        names = self.grades[item.nodeid] = _graded_by(item, module)
        fns = _lab_exercises(module, names)
        untouched = self.memory is not None and fns and len(fns) == len(names) and \
            all(memory.untouched_stub(f) for f in fns)
        known = _not_started(item.nodeid, names, fns) if untouched else None
        if known is None and self.memory is not None and not fns:
            known = _script_not_started(item, names)
        if known is not None:
            self.graded.append(known)
            return "stub"
        return self._remembered(item, fns, frames) if self.memory is not None else None

    def _remembered(self, item, fns, frames: dict) -> str | None:
        """Whether make check's memory holds this grader's grade for what it runs of the course
        as it is now (its key): "remembered" if so; else None, the key kept for the new grade."""
        file = item.module.__file__
        if file not in frames:      # what this grader file runs of the course
            frames[file] = memory.frame_digest(file)
        key = memory.grader_key(frames[file], item.module, fns)
        known = self.memory.recall(item.nodeid, key)
        if known is None:
            self.keys[item.nodeid] = key
            return None
        self.graded.append(Graded.from_dict(known, remembered=True))
        if self.graded[-1].kind == "failing":
            self.stopped.setdefault(family(item.nodeid), self.graded[-1])
        return "remembered"

    def _lesson_of(self, item) -> str:
        if not item.nodeid.startswith(GRADERS):
            return ""
        return self.lessons.get(_module_of(item.nodeid), "99")

    def _label(self, item) -> str:
        module = _module_of(item.nodeid)
        return f"  {self.lessons.get(module, '??')} {module:<12} {self.grades[item.nodeid][0]}"

    def _place_of(self, item) -> str:
        return self.places.get(self.grades[item.nodeid][0], "")

    def _say_plan(self, running, remembered, stubs):
        if self.memory is None:
            return
        parts = [f"{running} grader run(s) to do"]
        if remembered:
            parts.append(f"{remembered} remembered (unchanged since their last grade)")
        if stubs:
            parts.append(f"{stubs} on untouched stubs (not started: no workers needed)")
        self._write_line("  " + ", ".join(parts))

    def _write_line(self, text):
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(text)

    # -- while a test runs --------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        stopped = self.stopped.get(family(item.nodeid))
        if stopped is not None and item.nodeid in self.grades:
            pytest.skip(skipped_after(item.nodeid, (), None, stopped).reason)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        names = self.grades.get(item.nodeid)
        if names is None:
            yield
            return
        with grading(*names):
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        names = self.grades.get(item.nodeid)
        stopped = self.stopped.get(family(item.nodeid))
        if names is not None and report.skipped and stopped is not None:
            graded = skipped_after(item.nodeid, names, _world_size(item), stopped)
            report.user_properties += [(KEY, graded.as_dict()), ("rememberable", True)]
            return
        if names is None or not (call.when == "call" or report.failed):
            return
        exc = call.excinfo.value if call.excinfo is not None else None
        if report.passed or report.failed:
            reason = str(exc) if isinstance(exc, GradeFailure) else _crash(report)
            graded = graded_from_failure(item.nodeid, names, exc if report.failed else None,
                                         reason, _world_size(item))
            if graded.kind == "failing":
                self.stopped.setdefault(family(item.nodeid), graded)
            report.user_properties.append((KEY, graded.as_dict()))
            # Worth remembering: a pass, or a verdict of the grader (not a broken test run).
            report.user_properties.append(("rememberable", isinstance(exc, GradeFailure)
                                           or report.passed))
        if isinstance(exc, GradeFailure):
            report.longrepr = str(exc)       # what was wrong, not the grader's source

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if KEY in props:
            graded = Graded.from_dict(props[KEY])
            self.graded.append(graded)
            if graded.kind == "failing":
                self.stopped.setdefault(family(report.nodeid), graded)
            if self.progress is not None and not graded.remembered:
                self.progress.result(report.nodeid, graded)
            key = self.keys.get(report.nodeid)
            if self.memory is not None and key and props.get("rememberable"):
                self.memory.keep(report.nodeid, key, graded.as_dict())

    def pytest_collectreport(self, report):
        if report.failed and report.nodeid.startswith(GRADERS):
            module = _module_of(report.nodeid)
            if module in self.broken:
                return                 # its lab module does not load: the sheet says so
            names = tuple(n for _, m, n in self.exercises if m == module)
            if not self.lesson or self.lessons.get(module) == self.lesson:
                self.graded.append(Graded(report.nodeid, names, "failing",
                                          f"the grader could not be loaded: {_crash(report)}"))

    # -- progress: a line per exercise (tests/check_progress.py) ------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report, config):
        if report.nodeid.startswith(GRADERS) and (report.when == "call" or report.skipped):
            return report.outcome, "", report.outcome.upper()      # counted, no letter
        if report.nodeid.startswith(GRADERS) and report.failed:
            return "error", "", "ERROR"

    def pytest_runtest_logstart(self, nodeid, location):
        if self.progress is not None:
            self.progress.start(nodeid)

    # -- the end: the sheet, the exit status, the memory ---------------------------------------

    def sheet(self):
        if self._sheet is None:
            exercises = [e for e in self.exercises if not self.lesson or e[0] == self.lesson]
            broken = {m: b for m, b in self.broken.items()
                      if not self.lesson or b[0] == self.lesson}
            self._sheet = grade_sheet(self.graded, exercises, broken, self.lesson,
                                      self.places, _recent_lessons(self.lessons))
        return self._sheet

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Unsolved exercises are the learner's normal state, not an error: exit 0 unless an
        exercise you started fails (or a grader could not run)."""
        if self.memory is not None:
            self.memory.save()
            reference_cache.prune()
        sheet = self.sheet()
        if sheet.rows and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED,
                                         pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED if sheet.failing \
                else pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        sheet = self.sheet()
        if sheet.rows:
            title = f"lesson {self.lesson}" if self.lesson else "your exercises in labs/"
            terminalreporter.section(f"grade sheet: {title}")
            for line in sheet.lines():
                terminalreporter.write_line(line)
        elif self.lesson:
            terminalreporter.write_line(f"no lesson {self.lesson} with exercises: the lessons "
                                        f"with exercises are {sorted(set(self.lessons.values()))}")


def _graded_by(item, module) -> tuple:
    """The exercises a grader test grades: its `grades` marker, else test_<exercise>."""
    marker = item.get_closest_marker("grades")
    if marker:
        return tuple(marker.args)
    name = getattr(item, "originalname", item.name.split("[")[0]).removeprefix("test_")
    return (name,)


def _lab_exercises(module, names) -> list:
    """The exercises in labs/<module>.py with these names (those that exist)."""
    try:
        found = exercises_in(importlib.import_module(f"labs.{module}"))
    except Exception:  # noqa: BLE001 - a module that does not load is on the sheet already
        return []
    return [found[n] for n in names if n in found]


def _not_started(nodeid, names, fns) -> Graded | None:
    """The grade of a test whose exercises are untouched stubs, from the stubs themselves
    (each raises ExerciseNotSolved at once); None if one does something else."""
    unsolved = []
    for fn in fns:
        try:
            fn.stub(*[None] * fn.stub.__code__.co_argcount)
        except ExerciseNotSolved as exc:
            unsolved.append(exc.unsolved)
            continue
        except Exception:  # noqa: BLE001 - not the stub we thought: run its grader
            return None
        return None
    reason = " ".join(f"{u.exercise} is not implemented yet: write its body in {u.file} "
                      f"(see {u.section})." for u in unsolved)
    return Graded(nodeid, tuple(names), "not_started", reason,
                  tuple(u.exercise for u in unsolved))


def _script_not_started(item, names) -> Graded | None:
    """A script exercise (SCRIPT_EXERCISES) whose file is as shipped: not started, without
    running the doctor on it."""
    shipped = getattr(item.module, "SHIPPED_SHA256", None)
    files = getattr(item.module, "GRADED_FILES", ())
    if not shipped or not files or memory.text_sha256(files[0]) != shipped:
        return None
    where = Path(files[0]).relative_to(COURSE_ROOT)
    return Graded(item.nodeid, tuple(names), "not_started",
                  f"{names[0]} is not started: {where} is as shipped; fix it until the doctor "
                  f"is clean (see notebook 12, section 7).", tuple(names))


def _crash(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    text = str(report.longrepr).strip()
    return text.splitlines()[-1] if text else "failed"


# Exercises that are whole scripts, not function stubs: {lab module: (names)}; each is
# graded by tests/graders/test_<module>.py::test_<name>.
SCRIPT_EXERCISES = {"doctor": ("halo_exchange",)}


def _changed_since(grades: Path) -> bool:
    """Has a lab module (or a grader) changed since make check last remembered grades?
    Then some grader will likely start workers."""
    try:
        since = grades.stat().st_mtime
    except OSError:
        return True
    files = [*(COURSE_ROOT / "labs").glob("*.py"), *(COURSE_ROOT / "tests" / "graders").glob("*.py")]
    return any(f.stat().st_mtime > since for f in files if f.exists())


def _world_size(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("world_size") if callspec is not None else None


def _recent_lessons(lessons: dict) -> list:
    """The lessons, their lab module most recently changed first."""
    def changed(module):
        try:
            return (COURSE_ROOT / "labs" / f"{module}.py").stat().st_mtime
        except OSError:
            return 0.0
    return [lessons[m] for m in sorted(lessons, key=changed, reverse=True)]


def _place(fn) -> str:
    """'labs/ring.py:182': the line of an exercise's `def` in your lab module."""
    body = getattr(fn, "stub", fn)
    code = getattr(body, "__code__", None)
    if code is None:
        return ""
    try:
        lines = Path(code.co_filename).read_text().splitlines()
        line = code.co_firstlineno
        while line <= len(lines) and lines[line - 1].lstrip().startswith("@"):
            line += 1      # past the decorators: the def
        return f"{Path(code.co_filename).relative_to(COURSE_ROOT)}:{line}"
    except (OSError, ValueError):
        return ""


def _declared(module: str) -> tuple:
    """The exercises labs/<module>.py declares, read from its text (it may not parse)."""
    try:
        text = (COURSE_ROOT / "labs" / f"{module}.py").read_text()
    except OSError:
        return ()
    names = re.findall(r"^@exercise\b.*\n(?:@.*\n)*def (\w+)", text, re.M)
    return tuple(names) + SCRIPT_EXERCISES.get(module, ())


def _culprit(exc) -> str:
    """The lab module whose error `exc` is: a syntax error's file, else the innermost frame
    in a lab module ('' if none)."""
    labs = COURSE_ROOT / "labs"
    files = []
    tb = exc.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename:
        files.append(exc.filename)
    mine = [Path(f) for f in files if Path(f).parent == labs]
    return mine[-1].stem if mine else ""


def _exercises():
    """(lesson, module, exercise) in lesson order; {module: (lesson, why, names, needs)} for
    the lab modules that do not even import (a syntax error in your labs/<module>.py, or in
    one it imports: `needs`); exercise -> the line of its def."""
    found, broken, places = [], {}, {}
    for lesson in course.lessons():
        if not lesson.module:
            continue
        try:
            module = importlib.import_module(f"labs.{lesson.module}")
        except Exception as exc:  # noqa: BLE001 - the sheet reports it
            culprit = _culprit(exc)
            needs = culprit if culprit and culprit != lesson.module else ""
            broken[lesson.module] = (lesson.number, f"{type(exc).__name__}: {exc}",
                                     _declared(lesson.module), needs)
            continue
        for name, fn in exercises_in(module).items():
            found.append((lesson.number, lesson.module, name))
            places[name] = _place(fn)
        found += [(lesson.number, lesson.module, name)
                  for name in SCRIPT_EXERCISES.get(lesson.module, ())]
    return found, broken, places
