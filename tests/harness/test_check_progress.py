"""make check's order and progress lines (tests/check_progress.py), on made-up runs: the fast
world sizes first, a failure said at once with the learner's line, a live line on a terminal.
The real make check on a copy of the course: tests/harness/test_make_check.py."""
from types import SimpleNamespace

from labs.harness.grading.sheet import Graded
from tests.check_progress import Progress, fail_fast_order

RING = "tests/graders/test_ring.py::test_ring_all_reduce"
SCATTER = "tests/graders/test_ring.py::test_ring_reduce_scatter"


def _items(*families):
    return [SimpleNamespace(nodeid=f"{family}[{size}]", size=size)
            for family, sizes in families for size in sizes]


def test_each_grader_runs_at_its_smallest_world_size_and_5_first():
    items = _items((SCATTER, range(1, 9)), (RING, range(2, 9)))
    order = fail_fast_order(items[::-1], lambda item: "05", lambda item: item.size)
    assert [item.nodeid for item in order] == \
        [f"{RING}[{n}]" for n in (2, 5, 3, 4, 6, 7, 8)] + \
        [f"{SCATTER}[{n}]" for n in (1, 5, 2, 3, 4, 6, 7, 8)]
    odd = fail_fast_order(_items((RING, (1, 3))), lambda item: "05", lambda item: item.size)
    assert [item.size for item in odd] == [1, 3]       # no 5: the smallest, then the rest


class _Reporter:
    def __init__(self, tty):
        self.tty, self.out = tty, ""

    def isatty(self):
        return self.tty

    def write(self, text, flush=False):
        self.out += text

    def write_line(self, text):
        self.out += text + "\n"


def _graded(run, size, problem=""):
    kind = "failing" if problem else "solved"
    return Graded(f"{RING}[{size}]", ("ring_all_reduce",), kind, problem, world_size=size)


def _progress(tty, results):
    reporter = _Reporter(tty)
    progress = Progress(reporter)
    items = _items((RING, range(1, 9)))
    progress.plan(items, lambda item: "  05 ring         ring_all_reduce", lambda item: item.size,
                  lambda item: "labs/ring.py:180")
    for size, problem in results:
        progress.start(f"{RING}[{size}]")
        progress.result(f"{RING}[{size}]", _graded(RING, size, problem))
    return reporter.out


def test_right_at_the_fast_sizes_then_the_verdict_plain_lines_when_not_a_terminal():
    out = _progress(False, [(n, "") for n in (1, 5, 2, 3, 4, 6, 7, 8)])
    lines = out.splitlines()
    assert lines[0] == "  05 ring         ring_all_reduce  right at 1 and 5; grading 2, 3, 4, 6, " \
                       "7, 8 ..."
    assert lines[1].startswith("  05 ring         ring_all_reduce  solved (every run, world sizes "
                               "1, 2, 3, 4, 5, 6, 7 and 8), ")
    assert len(lines) == 2 and "\r" not in out


def test_a_failure_is_said_at_once_with_the_learners_line_and_ends_the_grading():
    out = _progress(False, [(1, ""), (5, ""), (2, "rank 1 is wrong at flat index 3")])
    lines = out.splitlines()
    assert lines[1].startswith("  05 ring         ring_all_reduce  FAILING at world size 2; 5 "
                               "run(s) not graded (a failure ends its grading), ")
    assert lines[2] == "      labs/ring.py:180: rank 1 is wrong at flat index 3"


def test_on_a_terminal_the_progress_line_is_rewritten_in_place():
    out = _progress(True, [(1, ""), (5, ""), (2, ""), (3, "")])
    assert out.count("\r") >= 4 and "2 of 6 done" in out and not out.endswith("\n")
