"""Run an exercise on real workers for a grader, and turn what went wrong into advice."""
from __future__ import annotations

import contextlib
import contextvars
import os
import re

from labs.harness.launch.launcher import HangError, WorkerError, launch
from labs.harness.grading import gloo_said
from labs.harness.grading import reference_files
from labs.harness.grading.reference_files import CACHE_ENV, STAGE_ENV
from labs.harness.launch.messages import describe_statuses
from labs.harness.launch.spec import IDLE_SECONDS, PROGRESS_CAP, STUCK_SECONDS
from labs.harness.ranks.exercises import SOLUTIONS_ENV

# A deadlock is reported once every rank still running has sat waiting in a
# torch.distributed call this long with nothing posted or completed (launch's stuck_after):
# told from a slow peer by what the ranks do, not by a clock, so a loaded machine cannot
# fake one (a rank that computes, however slowly, is not waiting). With stuck_after, the
# launch's timeout counts from the last sign of progress anywhere, which also ends a hang
# the ranks' status cannot see (a rank blocked outside torch.distributed while its peers
# wait). gloo's own timeout can only time one wait, and a loaded machine stretches a wait
# for a computing peer without bound: it is kept out of the way (the launch's cap).
HANG_SECONDS = STUCK_SECONDS
# The exercises the running grader test grades (tests/conftest.py sets it from the test's
# name or its `grades` marker): an unsolved one of these is "not started"; any other
# unsolved exercise the body calls is a dependency ("waiting").
_GRADED: contextvars.ContextVar[tuple] = contextvars.ContextVar("graded", default=())


@contextlib.contextmanager
def grading(*exercises: str):
    """Inside this block, grade() knows which exercises the test grades (by name)."""
    token = _GRADED.set(tuple(exercises))
    try:
        yield
    finally:
        _GRADED.reset(token)


class GradeFailure(AssertionError):
    """An exercise produced a wrong result or failed; the message says what and where.

    The state it stands for is data: `kind` is "failing" (a wrong result or an error),
    "not_started" (`unsolved`: the graded exercises whose stubs still raise) or "waiting"
    (`needs`: the other exercises, not solved yet, that the body calls), each an Unsolved.
    `problems`: each distinct problem of a run, whole (the message's lines after its first
    may continue one problem); empty: the message is one problem. `hung`: the run hung.
    """

    def __init__(self, message="", *, kind="failing", unsolved=(), needs=(), problems=(),
                 hung=False):
        super().__init__(plain_dtypes(message))
        self.kind, self.unsolved, self.needs = kind, tuple(unsolved), tuple(needs)
        self.problems, self.hung = tuple(map(plain_dtypes, problems)), hung

    def __reduce__(self):
        return _rebuild, (str(self), self.kind, self.unsolved, self.needs, self.problems,
                          self.hung)


def _rebuild(message, kind, unsolved, needs, problems=(), hung=False):
    return GradeFailure(message, kind=kind, unsolved=unsolved, needs=needs,
                        problems=problems, hung=hung)


GradeFailure.__module__ = "labs.harness.grading"   # where graders import it from

# A dtype as the graders' case labels say it ("float32"), however a check printed it
# (`torch.float32`, a torch.dtype's str); a traceback's source lines (indented) stay as written.
_TORCH_DTYPE = re.compile(r"(?<![\w.=])torch\.((?:b?float|u?int|complex)\d+|bool)\b(?!\()")


def plain_dtypes(text: str) -> str:
    return "\n".join(line if line.startswith("    ") else _TORCH_DTYPE.sub(r"\1", line)
                      for line in str(text).split("\n"))


def grade(worker, world_size, args=(), timeout=30.0, what="the exercise",
          pg_timeout=None, **kwargs):
    """launch() for graders: quiet, stubs never replaced, failures turned into advice.

    An exercise that stops at its stub (data the workers send: WorkerError.unsolved) is
    "not implemented yet" if this test grades it (`grading(...)`, set by tests/conftest.py;
    outside a test, the exercise named by `what`, a word of it, never a part of a word);
    any other is a dependency to solve first (GradeFailure kind "not_started" / "waiting").
    A deadlock is reported HANG_SECONDS after every rank sits waiting (stuck_after), any
    other hang `timeout` seconds after the last sign of progress, a rank outside any
    torch.distributed call with nothing posted, completed, begun or computed (asleep) after
    IDLE_SECONDS (idle_after=None: never), at its line; pg_timeout: gloo's
    timeout, unless given the launch's cap (PROGRESS_CAP timeouts), so it never fires first.
    """
    if pg_timeout is None:
        pg_timeout = PROGRESS_CAP * timeout
    staging = reference_files.staging_folder()    # the reference's records, kept if all done
    try:
        results = launch(worker, world_size, args=args, timeout=timeout, quiet=True,
                         pg_timeout=pg_timeout, stuck_after=HANG_SECONDS,
                         idle_after=kwargs.pop("idle_after", IDLE_SECONDS),
                         env={SOLUTIONS_ENV: "0", STAGE_ENV: staging,
                              CACHE_ENV: os.environ.get(CACHE_ENV, "")}, **kwargs)
        reference_files.commit(staging)
        return results
    except WorkerError as exc:
        raise _worker_failure(exc, what, world_size) from None
    except HangError as exc:
        raise _hang_failure(exc, what, world_size) from None
    finally:
        reference_files.discard(staging)


def _worker_failure(exc: WorkerError, what: str, world_size: int) -> GradeFailure:
    """A worker raised: a stub (not started), a check of the grader's (its own message), or
    the body's error, gloo's told in lesson 04's words."""
    if exc.unsolved:
        return unsolved_failure(exc.unsolved.values(), what)
    checked = {r: c for r, c in exc.causes.items() if c.startswith("GradeFailure: ")}
    if checked:     # a check inside the worker failed: its message says it all
        return _checked_failure(exc, min(checked), what, world_size)
    rank = min(exc.ranks) if exc.ranks else 0
    cause = _cause(exc.causes.get(rank, 'failed'))
    said = gloo_said.explained(exc)     # gloo's failures in lesson 04's words
    if said:
        rank, cause = said
    return GradeFailure(f"{what} (world_size={world_size}{_case(exc, rank)}): rank {rank} "
                        f"{cause}\n{_where(exc, rank, said is not None)}")


def _checked_failure(exc: WorkerError, rank: int, what: str, world_size: int) -> GradeFailure:
    """A GradeFailure raised in a worker (rank `rank`'s, the first): each line of its
    message one problem, each told once with the case it showed in."""
    whole = exc.messages.get(rank) or exc.causes[rank].removeprefix("GradeFailure: ")
    who = "" if whole.startswith(f"rank {rank} ") or _LOCATED.match(whole) else f"rank {rank}: "
    lines = [line for line in whole.splitlines() if line.strip()]
    case = _case(exc, rank).removeprefix(", ")
    problems = [who + line + (f" [{case}]" if case and case.removeprefix("case ") not in line
                              else "") for line in lines]       # a case said once
    return GradeFailure(f"{what} (world_size={world_size}{_case(exc, rank)}): {who}"
                        + "\n".join(lines), problems=problems)


def _hang_failure(exc: HangError, what: str, world_size: int) -> GradeFailure:
    """What each rank was blocked in, at the reader's line first (like a compiler), and
    which deadline passed: a deadlock or another hang."""
    located = describe_statuses(exc.statuses, timings=False, located=True)
    case = next((_case(exc, r) for r in sorted(exc.statuses) if _case(exc, r)), "")
    why = (f"Nothing moved for {HANG_SECONDS:g} s: a deadlock (two ranks each waiting for the "
           f"other) or a send/recv with no partner." if exc.stuck_for else
           exc.reason[:1].upper() + exc.reason[1:] + ".")
    head = f"{what} hung (world_size={world_size}{case})"
    problem = "\n".join([*located, f"{head}. {why} Notebook 04 shows how to read this."])
    return GradeFailure(f"{head}: {'; '.join(located)}\n{why} Notebook 04 shows how to read "
                        f"this.", problems=[problem], hung=True)


def graded_exercises(what: str = "") -> set:
    """The exercises the running grader grades: the test's own (conftest), else the names
    `what` spells out, compared as whole words."""
    return set(_GRADED.get()) or set(re.findall(r"\w+", what))


def unsolved_failure(unsolved, what: str = "the exercise", meanwhile: str = "") -> GradeFailure:
    """The GradeFailure for stubs that still raise (`unsolved`: Unsolved, any order, repeats
    allowed): "not started" if the test grades one of them, else "waiting" (`meanwhile`:
    what to use until the dependency is solved, added to its advice)."""
    found = list({u.exercise: u for u in sorted(unsolved, key=lambda u: u.exercise)}.values())
    own = graded_exercises(what)
    mine = [u for u in found if u.exercise in own]
    if mine:
        return GradeFailure(" ".join(f"{u.exercise} is not implemented yet: write its body in "
                                     f"{u.file} (see {u.section})." for u in mine),
                            kind="not_started", unsolved=mine)
    lines = []
    for u in found:
        lesson = u.file.rsplit("/", 1)[-1].removesuffix(".py")
        lines.append(f"{what} calls {u.exercise} ({u.file}), which is not solved yet: solve it "
                     f"first (see {u.section}) and grade it with .venv/bin/python -m pytest "
                     f"--impl=labs tests/graders/test_{lesson}.py{meanwhile}")
    return GradeFailure(" ".join(lines), kind="waiting", needs=found)


def _case(exc, rank) -> str:
    """', case <label>' if rank `rank` was inside a grader case (grading.call's note)."""
    status = exc.statuses.get(rank)
    note = status.note if status is not None else ""
    return f", {note}" if note.startswith("case ") else ""


def _where(exc, rank, explained=False) -> str:
    """The WorkerError's report without what the first line already says (that rank's
    cause; `explained`: gloo's own words, said in the lesson's) and without the notebook's
    "Details: ..." pointer: your code's lines (innermost first), then the other ranks."""
    lines = str(exc).splitlines()
    if lines and lines[0].startswith(f"rank {rank} ") and exc.causes.get(rank, "\0") in lines[0]:
        lines = lines[1:]
    lines = [gloo_said.retold(line) if explained else line for line in _without_graders(lines)]
    return "\n".join(line for line in lines
                     if line is not None and not line.startswith("Details: "))


# A traceback frame of the grader that called the body ("  tests/graders/test_ring.py:111 in
# all_reduce_grader") and the source line under it: not the learner's code, left out.
_GRADER_FRAME = re.compile(r"^\s+tests/graders/test_\w+\.py:\d+ in \w+$")


def _without_graders(lines: list[str]) -> list[str]:
    kept, source_next = [], False
    for line in lines:
        if _GRADER_FRAME.match(line):
            source_next = True
        elif not (source_next and line.startswith(" " * 6)):
            kept.append(line)
            source_next = False
        else:
            source_next = False
    return kept


def _cause(cause: str) -> str:
    return cause if cause.startswith(("was killed", "exited")) else f"raised {cause}"


_RANK = re.compile(r"\brank (\d+)\b")
_LOCATED = re.compile(r"^[\w./-]+\.py:\d+: ")      # "labs/ring.py:190: ...": located already
_PARENS = re.compile(r"\([^()]*(?:\([^()]*\)[^()]*)*\)")


def problem_kind(text: str) -> str:
    """`text` without what varies from case to case: parenthesised and bracketed details
    (the case's dtype and shape, an index) and numbers (ranks, values, world sizes)."""
    text = re.sub(r"\[[^\]]*\]", "", _PARENS.sub("", text))     # details, "[the same on ...]"
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", text)


def _problem(message: str):
    """(key, rank, case): messages with the same key are one problem, seen on several ranks
    or in several cases, e.g. "case 3 (...): rank 0 is wrong at flat index 1: got ..." and
    "case 5 (...): rank 2 is wrong at flat index 4: ...". The key is the case's words and
    what is said of the rank up to its details (":", ";" or ","), numbers and parenthesised
    details masked; `case`: the text before "rank N" (None: the message names no rank)."""
    found = _RANK.search(message)
    if not found:
        return problem_kind(message), None, None
    head = re.split(r"[:;,]", message[found.end():], maxsplit=1)[0]
    case = message[:found.start()]
    return (problem_kind(case), problem_kind(head)), int(found[1]), case


def distinct_problems(messages) -> list[str]:
    """One line per distinct problem, in the order first seen: its first message, then where
    else the same problem shows (the other ranks, the number of other cases)."""
    groups: dict = {}
    for message in messages:
        key, rank, case = _problem(message)
        first, ranks, cases = groups.setdefault(key, (message, [], []))
        if rank is not None and rank not in ranks:
            ranks.append(rank)
        if case is not None and case not in cases:
            cases.append(case)
    lines = []
    for first, ranks, cases in groups.values():
        also = []
        if len(ranks) > 1:
            others = ranks[1:]
            also.append(f"rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}")
        if len(cases) > 1:
            also.append(f"{len(cases) - 1} more case{'s' if len(cases) > 2 else ''}")
        lines.append(first + (f" [the same on {' and in '.join(also)}]" if also else ""))
    return lines


def fail_if_any(failures, what):
    """Raise one GradeFailure listing every distinct wrong case, once, none left out
    (`failures`: messages, per rank or flat; a case wrong on several ranks is one line that
    names them)."""
    flat = [f for item in failures for f in ([item] if isinstance(item, str) else item)]
    if flat:
        problems = distinct_problems(flat)
        raise GradeFailure(f"{what}: " + "\n".join(problems), problems=problems)
