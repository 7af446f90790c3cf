"""Lesson 10 (labs/algorithms.py): the code that is not an exercise, and the graders' own
tests (they reject the wrong bodies in tests/graders/bodies/algorithms.py)."""
import functools
import io
import re
import statistics
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
from tests.graders import test_algorithms as graders

BODIES = "tests.graders.bodies.algorithms"
SHAPES = [(), (0,), (1,), (2,), (3,), (4,), (2, 3), (1, 1, 7), (4099,), (65536 + 5,)]
DTYPES = ["float32", "float64", "bfloat16", "int64"]


# ----------------------------------------------------------------------------------------
# The graders reject what they must, and accept correct bodies in other styles
# ----------------------------------------------------------------------------------------

BUILTIN = "the lesson builds this from point-to-point sends and receives"
PARTNERS = "in this method rank"


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


@pytest.mark.parametrize("grader, good", [
    ("tree_broadcast", "broadcast_tree_far_first"),
    ("recursive_doubling_all_reduce", "doubling_far_first"),
    ("halving_doubling_all_reduce", "halving_near_first"),
])
@pytest.mark.parametrize("world_size", [3, 8])
def test_graders_accept_other_correct_styles(grader, good, world_size):
    _grade(grader, f"{BODIES}:{good}", world_size)


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
    against the exact float64 sum next to what is allowed. A fixed model (no calibration):
    best_all_reduce picks doubling for the small cases, the others for the large ones."""
    import solutions.algorithms as sol
    fns = {"best": sol.best_all_reduce, "halving_doubling": sol.halving_doubling_all_reduce,
           **{a: functools.partial(lab.run_algorithm, a) for a in lab.ALGORITHMS}}
    lab.set_model(lab.Model(alpha=1e-4, beta=1e9, gamma=1e-10))
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
                       "bfloat16": world_size * 2.0 ** -8}[dtype] * max(biggest, 1.0)
            out.append((name, dtype, shape, got is tensor, err, allowed))
    return out


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5])
def test_best_all_reduce_contract(world_size):
    names = ["best", "halving_doubling", *lab.ALGORITHMS]
    results = launch(contract_worker, world_size, args=(names,), timeout=120, quiet=True)
    for per_rank in results:
        for name, dtype, shape, same, err, allowed in per_rank:
            assert same, (name, dtype, shape, "must return the tensor it was given")
            assert err <= allowed, (name, dtype, shape, err, allowed)


def refuses_non_contiguous(rank, world_size):
    try:
        lab.best_all_reduce(torch.zeros(4, 4).t())
    except ValueError as exc:
        return str(exc)


def test_best_all_reduce_refuses_a_non_contiguous_tensor():
    assert "contiguous" in launch(refuses_non_contiguous, 2, quiet=True)[0]


def choices_worker(rank, world_size, sizes, model):
    """Which plan best_all_reduce runs for each size (run_plan replaced by a recorder)."""
    import labs.plans
    lab.set_model(model)
    ran, run_plan = [], labs.plans.run_plan
    labs.plans.run_plan = lambda flat, steps: ran.append(steps) or run_plan(flat, steps)
    sums = [lab.best_all_reduce(torch.ones(nbytes // 4)).unique().tolist() for nbytes in sizes]
    return ran, sums


def test_best_all_reduce_runs_the_plan_the_model_chooses():
    """Latency-bound: doubling (2 whole-tensor exchanges on 4 ranks); bandwidth-bound:
    halving-doubling (4 exchanges of halves and quarters)."""
    model = lab.Model(alpha=1e-3, beta=1e7)
    sizes = [1 << 10, 1 << 20]
    assert [lab.choose(4, n, model) for n in sizes] == ["doubling", "halving-doubling"]
    ran = launch(choices_worker, 4, args=(sizes, model), quiet=True)
    for rank, (plans, sums) in enumerate(ran):
        assert plans == [lab.plan(a, rank, 4, n // 4) for a, n in
                         zip(["doubling", "halving-doubling"], sizes)]
        assert [s.send_to for s in plans[0]] == [rank ^ 1, rank ^ 2]
        assert sums == [[4.0], [4.0]]


def test_the_duel_uses_the_pick_only_where_it_was_clearly_faster():
    """Faster by the median AND in most interleaved pairs; anything closer goes to gloo."""
    gloo = [1.0, 1.1, 0.9, 1.0, 1.2, 1.0, 0.95, 1.05, 1.0]
    assert lab.clearly_faster([t * 0.5 for t in gloo], gloo)
    # a median far lower, from five lucky pairs of nine: not clear
    lucky = [0.3, 0.3, 0.3, 0.3, 0.3, 1.3, 1.1, 1.2, 1.1]
    assert statistics.median(lucky) < 0.5 * statistics.median(gloo)
    assert not lab.clearly_faster(lucky, gloo)
    # faster in every pair, but by less than the margin: a close call
    assert not lab.clearly_faster([t * 0.95 for t in gloo], gloo)
    # 7 of 9 pairs, median 20% lower: clear; 6 of 9: not
    seven = [t * 0.8 for t in gloo[:7]] + [t * 1.5 for t in gloo[7:]]
    six = [t * 0.8 for t in gloo[:6]] + [t * 1.5 for t in gloo[6:]]
    assert lab.clearly_faster(seven, gloo) and not lab.clearly_faster(six, gloo)


def test_where_the_duel_found_gloo_faster_best_all_reduce_calls_gloo():
    """The duel's result, on the world size it ran on: at the dueled size nearest (log
    scale) to the tensor's, gloo's all_reduce if it won there, else the model's plan."""
    model = lab.Model(alpha=1e-3, beta=1e7, ranks=2, dueled=(1 << 10, 1 << 20),
                      library=(1 << 20,))
    sizes = [1 << 10, 1 << 14, 1 << 16, 1 << 20, 1 << 24]
    picks = [lab.choose(2, n, model) for n in sizes]
    assert picks == ["doubling", "doubling", lab.LIBRARY, lab.LIBRARY, lab.LIBRARY]
    assert lab.choose(4, 1 << 20, model) == lab.choose_plan(4, 1 << 20, model)
    for rank, (plans, sums) in enumerate(launch(choices_worker, 2, args=(sizes, model),
                                                quiet=True)):
        assert plans == [lab.plan("doubling", rank, 2, n // 4) for n in sizes[:2]]
        assert sums == [[2.0]] * len(sizes)


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


def test_demo_sums_on_every_world_size():
    for world_size in (1, 3):
        expected = [sum(10.0 * r + k for r in range(world_size)) for k in range(4)]
        assert launch(lab.demo, world_size, quiet=True) == [expected] * world_size


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
    assert lab.choose(4, crossover - 1, m) == "doubling"
    assert lab.choose(4, crossover, m) == "halving-doubling"
    # A slower network moves the crossover down: bandwidth matters sooner.
    slower = view.thresholds(4, lab.Model(alpha=1e-4, beta=1e8, gamma=1e-10))[1][0]
    assert slower < crossover
    assert lab.choose(2, 1 << 30, m) in ("doubling", "halving-doubling", "ring")


def calibrate_worker(rank, world_size):
    from labs.harness.ranks import tracing
    dist.barrier()
    model = lab.calibrate(sizes=[1 << 10, 1 << 16, 1 << 20], reps=2)
    return model, [e.op for e in tracing.TRACER.events]


def test_calibrate_fits_one_model_for_every_rank_and_keeps_the_trace():
    results = launch(calibrate_worker, 3, quiet=True)
    models = [m for m, _ in results]
    assert models[0] == models[1] == models[2]
    assert models[0].alpha >= 0 and models[0].beta > 0 and models[0].gamma > 0
    # the duel ran on these 3 ranks at every size; gloo won at some of them (or none)
    assert models[0].ranks == 3 and models[0].dueled == (1 << 10, 1 << 16, 1 << 20)
    assert set(models[0].library) <= set(models[0].dueled)
    # the caller's trace survives (ping_pong clears the trace it runs in)
    assert all(kept[0] == "barrier" for _, kept in results)


def test_time_calls_and_the_bench_table(tmp_path):
    names = ["all_reduce", "best", "doubling"]
    res = launch(lab.time_calls, 2, args=(names, [4096], 5, 1), timeout=60, quiet=True)
    assert res[0] == res[1] and all(len(v) == 5 and min(v) > 0 for v in res[0][4096].values())
    import labs.bench as bench
    out = io.StringIO()
    with redirect_stdout(out):
        bench.main(["algorithms", "--world-sizes", "2", "--sizes", "4K,64K", "--reps", "5",
                    "--out", str(tmp_path / "algorithms.png"), "--no-progress"])
    text = out.getvalue()
    assert re.search(r"^\s*2\s+64 KiB\s+[\d.]+", text, re.M) and "best" in text
    assert (tmp_path / "algorithms.png").stat().st_size > 1000


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
        pick = lab.choose(p, nbytes, m)
        assert times[pick] <= min(times.values()) * (1 + lab.CLOSE_CALL)
        fewer = [a for a in lab.ALGORITHMS if lab.steps_of(a, p) < lab.steps_of(pick, p)]
        assert all(times[a] > min(times.values()) * (1 + lab.CLOSE_CALL) for a in fewer)
