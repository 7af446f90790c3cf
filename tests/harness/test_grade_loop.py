"""The grading loop as a learner lives it: the exercise state is data, `make check` remembers.

Unit tests check that "not solved yet" travels as an exception with fields (ExerciseNotSolved
-> Failed -> WorkerError.unsolved -> GradeFailure.kind); hangs told by what the ranks do, in
seconds.
The sheet's own tests are in test_grade_sheet.py; the real `make check` runs on a copy of
the course are in test_make_check.py.
"""
import pickle
import sys
import textwrap
import time

import pytest
import torch

from labs import WorkerError, launch
from labs.harness.ranks.exercises import ExerciseNotSolved, Unsolved, exercise, todo
from labs.harness.grading import memory
from labs.harness.grading.run import (HANG_SECONDS, GradeFailure,
                                      distinct_problems, fail_if_any, grade, grading,
                                      unsolved_failure)
from labs.harness.grading.sheet import Graded, grade_sheet
from labs.harness.launch.unsolved import unsolved_exercise

from tests.harness.test_grade_sheet import G, RING, U


# -- "not solved yet" is an exception with fields --------------------------------------------

@exercise
def _a_stub(x):
    """A stub, as lab modules write them."""
    raise todo("notebook 99, 'Exercise 0: nothing'")


def test_a_stub_raises_an_exercise_not_solved_with_fields_and_the_same_words(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    with pytest.raises(NotImplementedError) as info:
        _a_stub(1)
    exc = info.value
    assert isinstance(exc, ExerciseNotSolved)
    assert exc.unsolved == Unsolved("_a_stub", "tests/harness/test_grade_loop.py",
                                    "notebook 99, 'Exercise 0: nothing'")
    assert str(exc) == ("exercise _a_stub in tests/harness/test_grade_loop.py is not solved yet: "
                        "write its body (see notebook 99, 'Exercise 0: nothing'), then grade "
                        "it with `make check`.")
    again = pickle.loads(pickle.dumps(exc))
    assert again.unsolved == exc.unsolved and str(again) == str(exc)


def stub_worker(rank, world_size):
    """Rank 0 stops at lesson 05's stub; rank 1 fails in its own way."""
    from labs.ring import ring_all_reduce
    import torch
    if rank == 1:
        raise ValueError("not a stub")
    return getattr(ring_all_reduce, "stub")(torch.ones(2))


def slow_peer(rank, world_size, seconds):
    """Rank 1 computes for `seconds` before it sends; rank 0 waits in recv all along."""
    import torch.distributed as dist
    t = torch.zeros(4)
    if rank == 1:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            torch.ones(32, 32) @ torch.ones(32, 32)
        dist.send(t + 1, 0)
    else:
        dist.recv(t, 1)
    return float(t.sum())


def _line(fn, text: str) -> str:
    """'tests/harness/test_grade_loop.py:88': the first line of `fn` that holds `text`."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    at = first + next(i for i, line in enumerate(lines) if text in line)
    return f"tests/harness/test_grade_loop.py:{at}"


def receives_head_to_head(rank, world_size):
    """Each rank receives from the other first: a deadlock."""
    import torch.distributed as dist
    dist.recv(torch.zeros(4), 1 - rank)


def test_a_grader_tells_a_deadlock_from_a_slow_peer_by_what_the_ranks_do(no_leftover_workers,
                                                                          monkeypatch):
    """gloo can only time one wait; the launch's stuck_after asks the ranks: a peer that
    computes for twice the hang window, longer than the grader's timeout, is no hang (the
    timeout counts from the last sign of progress, and CPU used is one: a loaded machine
    stretches every step), and a deadlock is reported once every rank has sat waiting
    HANG_SECONDS, long before any deadline."""
    from labs.harness.launch import supervise
    monkeypatch.setattr(supervise, "BUSY_CPU_SECONDS", 0.05)   # however loaded the machine
    assert list(grade(slow_peer, 2, args=(2 * HANG_SECONDS,), timeout=3)) == [4.0, 0.0]
    started = time.perf_counter()
    with pytest.raises(GradeFailure) as info:
        grade(receives_head_to_head, 2)
    took = time.perf_counter() - started
    here = _line(receives_head_to_head, "dist.recv")      # the reader's line, first
    assert str(info.value).startswith(f"the exercise hung (world_size=2): {here}: rank 0 "
                                      f"blocked in recv(from 1, tag 0, 4 x float32); {here}: "
                                      f"rank 1 blocked in recv(from 0, tag 0, 4 x float32)\n")
    assert info.value.hung and info.value.problems[0].startswith(f"{here}: rank 0 blocked in ")
    assert f"Nothing moved for {HANG_SECONDS:g} s" in str(info.value)
    assert HANG_SECONDS <= took < 30      # grade's timeout: the stuck watch ended it


def test_a_notebooks_exercise_cell_tells_a_hang_as_the_graders_do(no_leftover_workers):
    """launch_exercise: the same detection as the graders (every rank waiting, nothing
    moving, for HANG_SECONDS), not gloo's timeout; each rank at its line, first."""
    from labs import HangError
    from labs.harness.launch.unsolved import launch_exercise
    launch_exercise(slow_peer, 2, args=(0.0,), quiet=True)       # the fork server is up
    started = time.perf_counter()
    with pytest.raises(HangError) as info:
        launch_exercise(receives_head_to_head, 2)
    took = time.perf_counter() - started
    here = _line(receives_head_to_head, "dist.recv")
    assert str(info.value).splitlines()[1:3] == [
        f"  {here}: rank 0 blocked in recv(from 1, tag 0, 4 x float32)",
        f"  {here}: rank 1 blocked in recv(from 0, tag 0, 4 x float32)"], str(info.value)
    assert info.value.stuck_for >= HANG_SECONDS
    assert took < 22.5, f"{took:.1f} s: gloo's timeout, not the watch, ended it"


def receives_from_minus_one(rank, world_size):
    """Rank 0 receives from rank - 1 without % world_size: from rank -1."""
    import torch.distributed as dist
    dist.recv(torch.zeros(4), rank - 1 if rank == 0 else 0)


def test_a_receive_from_a_peer_that_is_no_rank_is_said_at_once(no_leftover_workers):
    from labs import HangError
    from labs.harness.launch.unsolved import launch_exercise
    with pytest.raises(HangError) as info:
        launch_exercise(receives_from_minus_one, 2)
    assert ("rank 0 waits in recv from rank -1: not a rank of this group (0..1): compute the "
            "peer with % 2") in str(info.value)
    assert info.value.stuck_for == 0.0      # not after the watch's window: at the first poll


def blocked_outside(rank, world_size, busy):
    """Rank 1 never sends: it sleeps (busy=False) or computes forever (busy=True) outside
    torch.distributed, while rank 0 waits in recv."""
    import torch.distributed as dist
    if rank == 0:
        dist.recv(torch.zeros(4), 1)
    while True:
        if busy:
            torch.ones(32, 32) @ torch.ones(32, 32)
        else:
            time.sleep(1)


def test_a_rank_blocked_outside_any_call_is_a_hang_once_nothing_moves(no_leftover_workers):
    """Not every rank waits, so the stuck watch cannot see it: nothing moving for the
    timeout (no op, no bytes, no CPU) ends it, with what each rank was doing."""
    started = time.perf_counter()
    with pytest.raises(GradeFailure) as info:
        grade(blocked_outside, 2, args=(False,), timeout=2, idle_after=None)   # as a notebook launches
    took = time.perf_counter() - started
    message = str(info.value)
    assert message.startswith(f"the exercise hung (world_size=2): "
                              f"{_line(blocked_outside, 'dist.recv')}: rank 0 blocked in "
                              f"recv(from 1, tag 0, 4 x float32); "
                              f"{_line(blocked_outside, 'time.sleep')}: rank 1 not inside a "
                              f"torch.distributed call"), message
    assert "Nothing moved for 2 s: no rank posted, completed or finished an operation" in message
    assert took < 4 * 2, "stopped by the timeout without progress, not by the cap"


def test_a_loop_that_never_ends_is_stopped_at_the_cap(no_leftover_workers, monkeypatch):
    """A rank that computes forever keeps showing progress (CPU): the launch's cap,
    PROGRESS_CAP timeouts after every rank joined, stops it and says so."""
    from labs.harness.launch import supervise
    from labs.harness.launch.spec import PROGRESS_CAP
    # a few percent of a core counts as computing: this test's timeout is short
    monkeypatch.setattr(supervise, "BUSY_CPU_SECONDS", 0.05)
    with pytest.raises(GradeFailure) as info:
        grade(blocked_outside, 2, args=(True,), timeout=1.5, idle_after=None)
    assert (f"No result after the launch timeout ({PROGRESS_CAP * 1.5:g} s), though the ranks "
            f"kept computing or moving data (a loop that never ends?)") in str(info.value)


def test_the_workers_send_the_unsolved_exercise_back_as_data(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(stub_worker, 2, quiet=True, env={"P2P_COURSE_SOLUTIONS": "0"})
    err = info.value
    assert err.unsolved == {0: Unsolved("ring_all_reduce", "labs/ring.py",
                                        "notebook 05, 'Exercise 2: ring all-reduce'")}
    assert unsolved_exercise(err) == ("ring_all_reduce", "labs/ring.py")


# -- the grader's own exercises vs its dependencies, by identity ------------------------------

def test_an_unsolved_exercise_is_the_graders_own_only_by_its_name():
    own = unsolved_failure([U["ring_all_reduce"]], what="ring_all_reduce")
    assert own.kind == "not_started" and own.unsolved == (U["ring_all_reduce"],)
    assert str(own).startswith("ring_all_reduce is not implemented yet: write its body in "
                               "labs/ring.py")
    # a name that contains the grader's is another exercise: a dependency
    other = unsolved_failure([U["pipelined_ring_all_reduce"]], what="ring_all_reduce")
    assert other.kind == "waiting" and other.needs == (U["pipelined_ring_all_reduce"],)
    other = unsolved_failure([U["ring_all_reduce"]], what="pipelined_ring_all_reduce")
    assert other.kind == "waiting"
    # inside a grader test, the test's own exercises decide, whatever `what` says
    with grading("pipelined_ring_all_reduce"):
        assert unsolved_failure([U["pipelined_ring_all_reduce"]], "the ring").kind == \
            "not_started"
        assert unsolved_failure([U["ring_all_reduce"]], "the ring").kind == "waiting"
    failure = pickle.loads(pickle.dumps(other))
    assert (failure.kind, failure.needs, str(failure)) == (other.kind, other.needs, str(other))


def test_one_problem_seen_on_every_rank_is_one_line():
    wrong = [f"case 3 (float32, shape (2,), world_size 4): rank {r} is wrong at flat index "
             f"{r % 2}: got {r}.0, expected 6.0" for r in range(4)]
    other = "case 5 (int64, shape (7,), world_size 4): rank 2 returned shape (6,)"
    assert distinct_problems(wrong[:2] + [other] + wrong[2:]) == [
        wrong[0] + " [the same on ranks 1, 2, 3]", other]
    with pytest.raises(GradeFailure) as info:
        fail_if_any([[wrong[0]], [wrong[1]], [wrong[2]], [wrong[3]]], "ring_all_reduce")
    assert str(info.value) == f"ring_all_reduce: {wrong[0]} [the same on ranks 1, 2, 3]"
    assert "wrong cases in all" not in str(info.value)
    # the same problem in other cases is one line too; different problems are not
    same = [f"case {i} (int64, shape ({i},)): rank 0 is wrong at flat index {i}" for i in range(8)]
    assert distinct_problems(same) == [same[0] + " [the same on 7 more cases]"]
    kinds = ["is wrong", "returned None", "changed `tensor`", "used all_reduce", "sent twice",
             "waited late", "posted twice", "returned its input"]
    with pytest.raises(GradeFailure) as info:      # every distinct problem, none left out
        fail_if_any([f"case {i}: rank 0 {kind}" for i, kind in enumerate(kinds)], "x")
    assert info.value.problems == tuple(f"case {i}: rank 0 {kind}" for i, kind in enumerate(kinds))
    assert "more problem" not in str(info.value)


# -- what make check remembers ---------------------------------------------------------------

LAB = '''
from labs.harness.ranks.exercises import exercise, todo

LIMIT = 3


def helper(x):
    return x + LIMIT


@exercise
def first(x):
    """A stub."""
    raise todo("notebook 98")


@exercise
def second(x):
    """A stub."""
    raise todo("notebook 98")
'''


def _lab_module(folder, name, text):
    import importlib.util
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(f"labs.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_key_changes_with_the_exercise_and_what_it_uses_not_with_other_exercises(tmp_path):
    grader = sys.modules[__name__]
    keys = {}
    texts = {
        "stubs": LAB,
        "first written": LAB.replace('"""A stub."""\n    raise todo("notebook 98")\n\n\n@exercise\n'
                                     'def second', 'return helper(x)\n\n\n@exercise\ndef second'),
    }
    texts["helper edited"] = texts["first written"].replace("return x + LIMIT", "return x - LIMIT")
    texts["constant edited"] = texts["first written"].replace("LIMIT = 3", "LIMIT = 4")
    texts["second edited"] = texts["first written"].replace(
        'def second(x):\n    """A stub."""\n    raise todo("notebook 98")',
        'def second(x):\n    """A stub."""\n    return first(x)')
    for i, (label, text) in enumerate(texts.items()):
        module = _lab_module(tmp_path / f"v{i}", "fakelesson", text)
        keys[label] = {n: memory.grader_key("frame", grader, [getattr(module, n)])
                       for n in ("first", "second")}
        assert memory.untouched_stub(module.second) == (label != "second edited")
        assert memory.untouched_stub(module.first) == (label == "stubs")
        sys.modules.pop("labs.fakelesson")
    firsts = [keys[k]["first"] for k in ("stubs", "first written", "helper edited",
                                         "constant edited")]
    assert len(set(firsts)) == 4, "the first exercise's key follows its body, helper, constant"
    assert keys["second edited"]["first"] == keys["first written"]["first"]
    # an untouched stub's key does not move when another exercise is written
    assert keys["stubs"]["second"] == keys["first written"]["second"] == \
        keys["helper edited"]["second"]
    assert keys["second edited"]["second"] != keys["first written"]["second"]


def test_the_memory_forgets_a_damaged_file(tmp_path):
    path = tmp_path / "grades.json"
    path.write_text("{not json")
    remembered = memory.Memory(path)
    assert remembered.recall("t", "k") is None
    remembered.keep("t", "k", {"nodeid": "t"})
    remembered.save()
    assert memory.Memory(path).recall("t", "k") == {"nodeid": "t"}
    assert memory.Memory(path).recall("t", "other key") is None



def test_a_hang_in_a_grader_parametrized_by_dtype_still_gives_a_sheet():
    """Its skipped runs have no world size: the sheet names them by their ids, it does not
    crash comparing None with None (and loses every lesson's grades)."""
    hung = Graded(f"{G}test_ring.py::test_ring_all_reduce[float16]", ("ring_all_reduce",),
                  "failing", "ring_all_reduce hung", hung=True)
    skipped = [Graded(f"{G}test_ring.py::test_ring_all_reduce[{d}]", ("ring_all_reduce",),
                      "skipped", "not graded", hung=True) for d in ("int64", "bfloat16")]
    row = next(r for r in grade_sheet([hung, *skipped], RING, {}, lesson="05").rows
               if r.exercise == "ring_all_reduce")
    assert row.status == "FAILING"
    assert row.problems[-1].endswith("(not graded at bfloat16, int64: a hang stops its grader, "
                                     "one is enough to fix first)")


def test_a_grade_depends_on_what_its_grader_runs_not_on_every_file_of_labs(tmp_path):
    """Appending a comment to lesson 12's script, or to a lesson's views, regrades nothing
    else; a change in the machinery a grader runs (its launcher), its reference or the test
    configuration regrades it."""
    import shutil

    from labs.harness import COURSE_ROOT
    root = tmp_path / "course"
    for part in ("labs", "solutions", "tests"):
        shutil.copytree(COURSE_ROOT / part, root / part,
                        ignore=shutil.ignore_patterns("__pycache__", "yours"))
    for name in memory.CONFIG:
        if not (root / name).exists():
            shutil.copy(COURSE_ROOT / name, root / name)
    grader = root / "tests/graders/test_ring.py"
    runs = {p.relative_to(root).as_posix() for p in memory.imported_files(grader, root)}
    assert {"labs/harness/launch/launcher.py", "labs/harness/grading/record.py",
            "solutions/ring.py", "tests/graders/test_ring.py"} <= runs
    assert "labs/ring.py" not in runs        # counted function by function (sources)
    assert not any(p.startswith(("labs/scripts/", "labs/doctor/", "labs/views/", "labs/bench/"))
                   for p in runs), sorted(runs)
    before = memory.frame_digest(grader, root)

    def digest_after(path, text="\n# an edit\n"):
        with open(root / path, "a") as f:
            f.write(text)
        return memory.frame_digest(grader, root)

    assert digest_after("labs/scripts/halo_exchange.py") == before
    assert digest_after("labs/views/ring.py") == before
    assert digest_after("labs/ring.py") == before
    changed = [digest_after(p) for p in ("labs/harness/launch/launcher.py", "solutions/ring.py",
                                         "pytest.ini")]
    assert len({before, *changed}) == 4
