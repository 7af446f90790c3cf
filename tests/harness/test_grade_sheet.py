"""The grade sheet reads types: unit tests feed it typed grades
(labs.harness.grading.sheet.Graded) and read its lines as a learner would."""
from labs.harness.grading.sheet import Graded, grade_sheet
from labs.harness.ranks.exercises import Unsolved

G = "tests/graders/"
RING = [("05", "ring", "ring_reduce_scatter"), ("05", "ring", "ring_all_reduce"),
        ("05", "ring", "pipelined_ring_all_reduce")]
U = {name: Unsolved(name, "labs/ring.py", f"notebook 05, '{name}'") for _, _, name in RING}


def _graded(test, kind="solved", reason="", unsolved=(), needs=(), remembered=False, ws=2):
    module, name = test.split("::")
    return Graded(f"{G}test_{module}.py::test_{name}[{ws}]", (name,), kind, reason,
                  tuple(unsolved), tuple(n.as_dict() for n in needs), remembered, ws)


def test_a_solved_ring_is_solved_while_the_pipelined_ring_is_a_stub():
    graded = [_graded("ring::ring_reduce_scatter"), _graded("ring::ring_all_reduce"),
              _graded("ring::ring_all_reduce", ws=3),
              _graded("ring::pipelined_ring_all_reduce", "not_started", "pipelined_... is not "
                      "implemented yet", ["pipelined_ring_all_reduce"])]
    sheet = grade_sheet(graded, RING, {})
    assert [(r.exercise, r.status) for r in sheet.rows] == [
        ("ring_reduce_scatter", "solved"), ("ring_all_reduce", "solved"),
        ("pipelined_ring_all_reduce", "not started")]


def _a_mixed_sheet():
    """Every kind of row: remembered, failing at two sizes, a stub, waiting on a need, a lab
    that does not load and one that waits for it."""
    graded = [
        _graded("ring::ring_reduce_scatter", remembered=True),
        _graded("ring::ring_all_reduce", "failing", "ring_all_reduce: case 3 (float32, shape "
                "(2,), world_size 2): rank 0 is wrong\nlabs/ring.py:190 in ring_all_reduce"),
        _graded("ring::ring_all_reduce", "failing", "ring_all_reduce: case 3 (float32, shape "
                "(2,), world_size 3): rank 0 is wrong\nlabs/ring.py:190 in ring_all_reduce", ws=3),
        _graded("ring::pipelined_ring_all_reduce", "not_started", "...",
                ["pipelined_ring_all_reduce"]),
        _graded("gradients::average_gradients_ring", "waiting", "... calls ring_all_reduce",
                needs=[U["ring_all_reduce"]]),
        Graded(f"{G}test_collectives.py", ("x",), "failing", "the grader could not be loaded")]
    exercises = RING + [("06", "gradients", "average_gradients_ring"), ("07", "collectives", "x")]
    # a module that does not load fails its own lesson; one that imports it waits for it,
    # each exercise still a row (read from the file): the count stays
    broken = {"collectives": ("07", "SyntaxError: invalid syntax (collectives.py, line 9)"),
              "snippets": ("08", "SyntaxError: invalid syntax (collectives.py, line 9)",
                           ("fixed_a", "fixed_b"), "collectives")}
    return graded, exercises, broken


def test_the_grade_sheet_reads_in_five_seconds():
    graded, exercises, broken = _a_mixed_sheet()
    sheet = grade_sheet(graded, exercises, broken)
    assert [r.status for r in sheet.rows] == ["solved", "FAILING", "not started", "waiting",
                                              "FAILING", "FAILING", "waiting", "waiting"]
    lines = sheet.lines()
    assert lines[:4] == [
        "05 ring         solved       ring_reduce_scatter  [remembered]",
        "                FAILING      ring_all_reduce: case 3 (float32, shape (2,), world_size 2):"
        " rank 0 is wrong",
        "                not started  pipelined_ring_all_reduce",
        "06 gradients    waiting      average_gradients_ring: needs ring_all_reduce "
        "(labs/ring.py), which is not solved yet"]
    assert lines[4] == ("07 collectives  FAILING      labs/collectives.py does not load: "
                        "SyntaxError: invalid syntax (collectives.py, line 9)")
    assert lines[6:8] == ["08 snippets     waiting      fixed_a: needs labs/collectives.py, "
                          "which does not load (SyntaxError: invalid syntax (collectives.py, "
                          "line 9))", "                waiting      fixed_b: needs "
                          "labs/collectives.py, which does not load (SyntaxError: invalid "
                          "syntax (collectives.py, line 9))"]
    assert lines[9].startswith("1 of 8 exercises solved, 3 failing, 1 not started, 3 waiting")
    assert lines[10].startswith("[remembered]: unchanged since its last grade")
    assert lines[11] == "Details for one lesson (every problem, once): make check LESSON=05"


def test_the_sheet_points_at_the_lesson_you_work_on():
    """The lesson you work on (changed last, of those you started) if it has a problem."""
    graded, exercises, broken = _a_mixed_sheet()
    assert grade_sheet(graded, exercises, broken, recent=("06", "05")).lines()[-1] == \
        "Details for one lesson (every problem, once): make check LESSON=06"
    solved_04 = [Graded(f"{G}test_deadlocks.py::test_exchange_batched[2]", ("exchange_batched",))]
    assert grade_sheet(solved_04, [("01", "p2p", "x")] + [("04", "deadlocks", "exchange_batched")],
                       {}, recent=("04", "01")).lines()[-1].endswith("LESSON=04")


def test_one_lessons_sheet_says_every_problem_once():
    """One lesson: every distinct problem once, your line first, its world sizes on one line."""
    graded, _, _ = _a_mixed_sheet()
    detail = grade_sheet(graded[:4], RING, {}, lesson="05",
                         places={"ring_all_reduce": "labs/ring.py:180"}).lines()
    assert detail[1:5] == [
        "                FAILING      ring_all_reduce: 1 problem, below",
        " " * 18 + "labs/ring.py:190: ring_all_reduce: case 3 (float32, shape (2,), world_size 2):"
        " rank 0 is wrong",
        " " * 18 + "labs/ring.py:190 in ring_all_reduce",
        " " * 18 + "    at world sizes 2, 3"]
    assert detail[5].startswith("                not started")
    assert not any("Details for one lesson" in line for line in detail)
