"""Lesson 10 (labs/algorithms.py): the code that is not an exercise, and the graders' own
tests (they reject the wrong bodies in tests/graders/bodies/algorithms/__init__.py)."""
import functools
import os
import tempfile
import io
import re
from contextlib import redirect_stdout

import pytest
import torch
import torch.distributed as dist

import labs.algorithms as lab
import labs.views.algorithms as view
from labs import launch
from labs.harness.grading import GradeFailure
from labs.harness.ranks.data import seeded
from labs.ring import chunk_bounds
from tests.graders import bf16_sum_tolerance
from tests.graders import test_algorithms as graders

BODIES = "tests.graders.bodies.algorithms"
# best_all_reduce's choices are set in these workers, never read or measured; should one be
# missing, the file it would write is not the learner's (tests/lessons/test_choices.py)
NO_FILE = {"P2P_COURSE_BEST_CACHE": os.path.join(tempfile.gettempdir(), "p2p-tests-choices.json")}
SHAPES = [(), (0,), (1,), (2,), (3,), (4,), (2, 3), (1, 1, 7), (4099,), (65536 + 5,)]
DTYPES = ["float32", "float64", "bfloat16", "int64"]


# ----------------------------------------------------------------------------------------
# The graders reject what they must, and accept correct bodies in other styles
# ----------------------------------------------------------------------------------------

BUILTIN = "the lesson builds this from point-to-point sends and receives"
PARTNERS = "in this method rank"


@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("grader, bad, world_size, message", [
    ("tree_broadcast", "broadcast_builtin", 2, BUILTIN),
    ("tree_broadcast", "broadcast_star", 4, "after 3 rounds"),
    ("tree_broadcast", "broadcast_chain", 5, "after 4 rounds"),
    ("recursive_doubling_all_reduce", "all_reduce_builtin", 4, BUILTIN),
    ("recursive_doubling_all_reduce", "all_reduce_ring", 4,
     ("recursive doubling on 4 ranks", PARTNERS, "never sent anything")),
    ("recursive_doubling_all_reduce", "all_reduce_new_tensor", 2,
     ("must work in place", "must return its first argument itself")),
    ("recursive_doubling_all_reduce", "all_reduce_no_fold", 3,
     ("is wrong at flat index", PARTNERS, "never sent anything", "partial sums")),
    ("halving_doubling_all_reduce", "all_reduce_builtin", 2, BUILTIN),
    ("halving_doubling_all_reduce", "all_reduce_ring", 4,
     ("halving-doubling on 4 ranks", PARTNERS, "never sent anything")),
    ("halving_doubling_all_reduce", "all_reduce_doubling", 2,
     ("halving-doubling on 2 ranks", "the method has 2", "no message holds more than",
      "the method waits for that request first")),
])
def test_graders_reject_wrong_bodies(grader, bad, world_size, message):
    messages = message if isinstance(message, tuple) else (message,)
    with pytest.raises(GradeFailure, match="|".join(map(re.escape, messages))):
        _grade(grader, f"{BODIES}:{bad}", world_size)


@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("grader, good", [
    ("tree_broadcast", "broadcast_tree_far_first"),
    ("recursive_doubling_all_reduce", "doubling_far_first"),
    ("halving_doubling_all_reduce", "halving_near_first"),
])
@pytest.mark.parametrize("world_size", [3, 8])
def test_graders_accept_other_correct_styles(grader, good, world_size):
    _grade(grader, f"{BODIES}:{good}", world_size)


@pytest.mark.all_lane          # the stubs proof: make test-all
def test_graders_fail_on_the_stubs():
    for grader in ("tree_broadcast", "recursive_doubling_all_reduce",
                   "halving_doubling_all_reduce"):
        with pytest.raises(GradeFailure, match="not implemented yet.*notebook 10"):
            _grade(grader, "labs", 2)


def _grade(grader, impl, world_size):
    if grader == "tree_broadcast":
        graders.grade_tree_broadcast(impl, world_size)
    else:
        graders.grade_all_reduce(impl, grader, world_size)


# ----------------------------------------------------------------------------------------
# best_all_reduce, the engine's algorithms, and the names solutions.algorithms exports
# ----------------------------------------------------------------------------------------

def contract_worker(rank, world_size, names):
    """Every (name, dtype, shape): in place, returns its tensor, and the sum's error
    against the exact float64 sum next to what is allowed. best_all_reduce's choices are
    set, not measured: every option at some size class, so the cases run each of them."""
    import solutions.algorithms as sol
    from labs import choices
    fns = {"best": sol.best_all_reduce, "halving_doubling": sol.halving_doubling_all_reduce,
           **{a: functools.partial(lab.run_algorithm, a) for a in lab.ALGORITHMS}}
    choices.set_choices(world_size, {c: choices.OPTIONS[i % len(choices.OPTIONS)]
                                     for i, c in enumerate(choices.CLASSES)})
    ran, run = set(), lab.run_algorithm        # what best_all_reduce ran, recorded
    lab.run_algorithm = lambda what, t: ran.add(what) or run(what, t)
    out = []
    for i, (dtype, shape) in enumerate([(d, s) for d in DTYPES for s in SHAPES]):
        data = seeded(rank, shape, dtype, seed=i)
        exact, magnitude = data.double().clone(), data.double().abs()
        dist.all_reduce(exact)
        dist.all_reduce(magnitude)
        for name in names:
            tensor = data.clone()
            got = fns[name](tensor)
            err = (tensor.double() - exact).abs().max().item() if data.numel() else 0.0
            biggest = magnitude.max().item() if data.numel() else 0.0
            allowed = {"float32": 1e-5, "float64": 1e-12, "int64": 0.0,
                       "bfloat16": bf16_sum_tolerance(world_size)}[dtype] * max(biggest, 1.0)
            out.append((name, dtype, shape, got is tensor, err, allowed))
    return out, sorted(ran)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5])
def test_best_all_reduce_contract(world_size, tmp_path):
    names = ["best", "halving_doubling", *lab.ALGORITHMS]
    results = launch(contract_worker, world_size, args=(names,), timeout=120, quiet=True,
                     env={"P2P_COURSE_BEST_CACHE": tmp_path / "choices.json"})
    for per_rank, ran in results:
        assert ran == (sorted(lab.choices.OPTIONS) if world_size > 1 else [])
        for name, dtype, shape, same, err, allowed in per_rank:
            assert same, (name, dtype, shape, "must return the tensor it was given")
            assert err <= allowed, (name, dtype, shape, err, allowed)
    assert not (tmp_path / "choices.json").exists()     # set, not measured: nothing saved


def non_contiguous_worker(rank, world_size, what):
    """best_all_reduce on transposed and strided views, with `what` chosen at every size:
    in place (through a contiguous copy written back), the values of dist.all_reduce (up to
    the order of the additions), and the elements outside the view untouched."""
    from labs import choices
    choices.set_choices(world_size, {c: what for c in choices.CLASSES})
    out = []
    for i, (dtype, make) in enumerate([("float32", lambda t: t.t()),
                                       ("int64", lambda t: t[:, ::2]),
                                       ("bfloat16", lambda t: t.t()[1:])]):
        base = seeded(rank, (6, 8), dtype, seed=i)
        before, view = base.clone(), make(base)
        expected = view.contiguous()
        dist.all_reduce(expected)
        got = lab.best_all_reduce(view)
        outside = torch.ones_like(base, dtype=torch.bool)
        make(outside).fill_(False)
        tol = {"float32": 1e-5, "int64": 0.0, "bfloat16": bf16_sum_tolerance(world_size)}[dtype]
        close = torch.allclose(view.double(), expected.double(), rtol=tol, atol=tol)
        out.append((got is view, not view.is_contiguous(), close,
                    torch.equal(base[outside], before[outside])))
    return out


@pytest.mark.parametrize("world_size, what", [(2, "doubling"), (3, "ring"),
                                              (4, "halving-doubling"), (2, lab.LIBRARY)])
def test_best_all_reduce_sums_a_non_contiguous_tensor_in_place(world_size, what):
    for per_rank in launch(non_contiguous_worker, world_size, args=(what,), quiet=True,
                           env=NO_FILE):
        assert per_rank == [(True, True, True, True)] * 3


def choices_worker(rank, world_size, runs, sizes):
    """Which plan best_all_reduce runs for each size (run_plan replaced by a recorder)."""
    import labs.plans
    from labs import choices
    choices.set_choices(world_size, runs)
    ran, run_plan = [], labs.plans.run_plan
    labs.plans.run_plan = lambda flat, steps: ran.append(steps) or run_plan(flat, steps)
    sums = [lab.best_all_reduce(torch.ones(nbytes // 4)).unique().tolist() for nbytes in sizes]
    return ran, sums


def test_best_all_reduce_runs_the_decided_algorithm_at_each_size_class():
    """The decision holds for the size class (nearest power of 4): doubling around 1 KiB,
    halving-doubling around 1 MiB, gloo's own all_reduce (no plan) around 64 KiB."""
    runs = {1 << 10: "doubling", 1 << 16: lab.LIBRARY, 1 << 20: "halving-doubling"}
    sizes = [1 << 10, 1 << 9, 1 << 16, 1 << 20, 3 << 19]
    for rank, (plans, sums) in enumerate(launch(choices_worker, 4, args=(runs, sizes),
                                                quiet=True, env=NO_FILE)):
        assert plans == [lab.plan("doubling", rank, 4, n // 4) for n in sizes[:2]] + \
            [lab.plan("halving-doubling", rank, 4, n // 4) for n in sizes[3:]]
        assert [s.send_to for s in plans[0]] == [rank ^ 1, rank ^ 2]
        assert sums == [[4.0]] * len(sizes)


# ----------------------------------------------------------------------------------------
# Trees, plans and the model
# ----------------------------------------------------------------------------------------

def rooted_worker(rank, world_size, root):
    data = seeded(rank, (5,), "int64")
    expected = data.clone()
    dist.reduce(expected, root)
    tree, star = lab.tree_reduce(data.clone(), root), lab.star_reduce(data.clone(), root)
    return (tree.tolist(), star.tolist(), expected.tolist()) if rank == root else None


@pytest.mark.parametrize("world_size, root", [(1, 0), (2, 1), (5, 0), (6, 3), (8, 5)])
def test_tree_and_star_reduce_match_dist_reduce(world_size, root):
    results = launch(rooted_worker, world_size, args=(root,), quiet=True,
                     env={"P2P_COURSE_SOLUTIONS": "1"})   # star_reduce uses lesson 07's gather
    tree, star, expected = results[root]
    assert tree == expected and star == expected


def test_demo_sums_on_every_world_size(tmp_path):
    for world_size in (1, 3):
        expected = [sum(10.0 * r + k for r in range(world_size)) for k in range(4)]
        assert launch(lab.demo, world_size, quiet=True,
                      env={"P2P_COURSE_BEST_CACHE": tmp_path / "choices.json"}) == \
            [expected] * world_size


def test_tree_rounds_double_the_holders():
    assert view.tree_rounds(8) == [[(0, 1)], [(0, 2), (1, 3)],
                                  [(0, 4), (1, 5), (2, 6), (3, 7)]]
    assert view.tree_rounds(5, root=3) == [[(3, 4)], [(3, 0), (4, 1)], [(3, 2)]]
    assert view.tree_rounds(1) == []


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("numel", [0, 1, 3, 1000, 4099])
def test_plans_move_the_textbook_bytes(p, numel):
    """Every element sent is received by the named peer; bytes per rank as the formulas say."""
    q = lab.power_of_two_below(p)
    steps = (q.bit_length() - 1)
    for algorithm in lab.ALGORITHMS:
        plans = [lab.plan(algorithm, r, p, numel) for r in range(p)]
        sent = {(r, s.send_to, s.send) for r, pl in enumerate(plans) for s in pl
                if s.send_to is not None}
        got = {(s.recv_from, r, s.recv) for r, pl in enumerate(plans) for s in pl
               if s.recv_from is not None}
        assert sent == got, algorithm
        for r, pl in enumerate(plans):
            volume = sum(s.send[1] - s.send[0] for s in pl if s.send_to is not None)
            fold = (r >= q or r + q < p) * numel
            if algorithm == "ring":
                own, next_own = _chunk(numel, p, r), _chunk(numel, p, (r + 1) % p)
                assert len(pl) == 2 * (p - 1) and volume == 2 * numel - own - next_own
            elif algorithm == "doubling":
                assert len(pl) == (2 if r >= q else steps + 2 * (r + q < p))
                assert volume == (numel if r >= q else steps * numel + fold)
            elif r < q:   # 2(q-1)/q of the tensor, up to the chunks' rounding
                assert abs(volume - fold - 2 * (q - 1) * numel / q) <= q


def _chunk(numel, parts, i):
    start, stop = chunk_bounds(numel, parts)[i]
    return stop - start


def test_model_prices_plans_like_the_textbook_formulas():
    m = lab.Model(alpha=1e-4, beta=1e9, gamma=0.0)
    n = 1 << 20
    assert lab.predict("ring", 4, n, m) == pytest.approx(6 * (m.alpha + n / 4 / m.beta))
    assert lab.predict("doubling", 4, n, m) == pytest.approx(2 * (m.alpha + n / m.beta))
    assert lab.predict("halving-doubling", 4, n, m) == pytest.approx(
        4 * m.alpha + 2 * 3 / 4 * n / m.beta)
    # 3 ranks: the fold costs two whole-tensor messages on rank 0
    assert lab.predict("doubling", 3, n, m) == pytest.approx(3 * (m.alpha + n / m.beta))
    assert lab.predict("ring", 1, n, m) == 0.0


def test_choice_and_thresholds_follow_the_model():
    m = lab.Model(alpha=1e-4, beta=1e9, gamma=1e-10)
    steps = view.thresholds(4, m)
    assert [a for _, a in steps] == ["doubling", "halving-doubling"]
    crossover = steps[1][0]
    assert lab.choose_plan(4, crossover - 1, m) == "doubling"
    assert lab.choose_plan(4, crossover, m) == "halving-doubling"
    # A slower network moves the crossover down: bandwidth matters sooner.
    slower = view.thresholds(4, lab.Model(alpha=1e-4, beta=1e8, gamma=1e-10))[1][0]
    assert slower < crossover
    assert lab.choose_plan(2, 1 << 30, m) in ("doubling", "halving-doubling", "ring")


def fit_worker(rank, world_size):
    from labs.harness.ranks import tracing
    dist.barrier()
    model = lab.fit(sizes=[1 << 10, 1 << 16, 1 << 20], reps=2)
    return model, [e.op for e in tracing.TRACER.events]


def test_fit_gives_one_model_to_every_rank_and_keeps_the_trace():
    results = launch(fit_worker, 3, quiet=True)
    models = [m for m, _ in results]
    assert models[0] == models[1] == models[2]
    assert models[0].alpha >= 0 and models[0].beta > 0 and models[0].gamma > 0
    # the caller's trace survives (ping_pong clears the trace it runs in)
    assert all(kept[0] == "barrier" for _, kept in results)


def test_time_calls_and_the_bench_table(tmp_path):
    names = ["all_reduce", "best", "doubling"]
    cache = tmp_path / "choices.json"
    res = launch(lab.time_calls, 2, args=(names, [4096], 5, 1), timeout=60, quiet=True,
                 env={"P2P_COURSE_BEST_CACHE": cache})
    assert res[0] == res[1] and all(len(v) == 5 and min(v) > 0 for v in res[0][4096].values())
    import labs.bench as bench
    out = io.StringIO()
    with redirect_stdout(out):
        bench.main(["algorithms", "--world-sizes", "2", "--sizes", "4K,64K", "--reps", "5",
                    "--out", str(tmp_path / "algorithms.png"), "--no-progress",
                    "--cache", str(cache)])
    text = out.getvalue()
    row = re.search(r"^\s*2\s+4 KiB\s+[\d.]+\s+[\d.]+\s+[\d.]+.*\(([a-z-]+)\)\s+"
                    r"(faster than gloo|SLOWER than gloo|within the noise)", text, re.M)
    # time_calls measured 4 KiB and kept it: gloo's used as saved, a pick confirmed first
    assert row and row.group(1) in ("saved", "confirmed", "re-measured"), text
    assert re.search(r"^\s*2\s+64 KiB.*\(measured\)", text, re.M), text
    assert "noise floor of this run: gloo against itself within" in text
    assert "ratios of medians" in text and "single calls" in text
    assert (tmp_path / "algorithms.png").stat().st_size > 1000


def test_the_bench_times_calls_back_to_back(tmp_path):
    """--back-to-back N: each timing is N calls between two barriers, the time per call."""
    import labs.bench.algorithms as bench_algorithms
    names = ["all_reduce", "doubling"]
    res = launch(bench_algorithms.time_back_to_back, 2, args=(names, [4096], 5, 1, 3),
                 timeout=60, quiet=True)
    assert res[0] == res[1] and all(len(v) == 5 and min(v) > 0 for v in res[0][4096].values())
    import labs.bench as bench
    out = io.StringIO()
    with redirect_stdout(out):
        bench.main(["algorithms", "--world-sizes", "2", "--sizes", "4K", "--reps", "5",
                    "--names", "doubling", "--back-to-back", "3", "--out", "",
                    "--no-progress", "--cache", str(tmp_path / "choices.json")])
    assert "repetitions of 3 calls back to back per timing" in out.getvalue()
    assert not (tmp_path / "choices.json").exists()      # best not timed: nothing decided


def test_tree_reduce_is_the_broadcast_tree_backwards():
    """Every rank's reduce messages are its broadcast messages reversed, in reverse order."""
    for p in range(1, 13):
        for v in range(p):
            bcast = ([("recv", lab.tree_parent(v))] if v else []) + \
                [("send", c) for c in lab.tree_children(v, p)]
            reduce = [("recv", c) for c in reversed(lab.tree_children(v, p))] + \
                ([("send", lab.tree_parent(v))] if v else [])
            flip = {"send": "recv", "recv": "send"}
            assert reduce == [(flip[o], q) for o, q in reversed(bcast)]


def test_a_close_call_goes_to_fewer_steps():
    m = lab.Model(alpha=1e-4, beta=1e9, gamma=1e-10)
    for p, nbytes in [(2, 1 << 20), (2, 1 << 26), (4, 1 << 18)]:
        times = {a: lab.predict(a, p, nbytes, m) for a in lab.ALGORITHMS}
        pick = lab.choose_plan(p, nbytes, m)
        assert times[pick] <= min(times.values()) * (1 + lab.CLOSE_CALL)
        fewer = [a for a in lab.ALGORITHMS if lab.steps_of(a, p) < lab.steps_of(pick, p)]
        assert all(times[a] > min(times.values()) * (1 + lab.CLOSE_CALL) for a in fewer)
