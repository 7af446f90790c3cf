"""Lesson 05: graders for the ring exercises, and the lesson's own worker functions.

Graders run every case (4 dtypes x many shapes, numel 0 and numel < world size included)
inside ONE launch per world size and report all wrong cases at once, naming the rank, the
case, and expected vs got.
"""
from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import pytest
import torch
import torch.distributed as dist

import labs.ring as lab
from labs import launch
from labs.harness.grading import GradeFailure, check_close, grade, implementation

SHAPES = [(), (0,), (1,), (2,), (3,), (7,), (3, 5), (2, 3, 4), (1, 1, 13), (257,), (4099,)]
CASES = [(dtype, shape) for dtype in lab.DTYPES for shape in SHAPES]
# The pipelined ring also gets small segments: many per chunk, down to one element each.
PIPELINE_CASES = [(d, s, None) for d, s in CASES] + [
    (d, s, 12) for d, s in CASES if 0 < torch.Size(s).numel() <= 64] + [
    ("float32", (37,), 1), ("int64", (3, 7), 8), ("float32", (4099,), 4096),
    ("bfloat16", (4099,), 1000), ("float64", (257,), 100)]

# bfloat16 keeps 8 significant bits: every addition rounds with a relative error of at
# most u = 2**-8. A sum over n ranks in any order (the ring's, gloo's, or once in float32)
# is then within n * u * sum_i |x_i| of the exact sum, element by element.
BF16_U = 2.0 ** -8


def _check(got, expected, exact, magnitude, *, rank, world_size, what):
    """Raise GradeFailure if `got` is wrong; `expected` is dist.all_reduce's result."""
    if got.dtype != torch.bfloat16:
        check_close(got, expected, rank=rank, what=what)
        return
    check_close(got, expected, rank=rank, what=what, atol=float("inf"))  # shape and dtype
    err = (got.double() - exact).abs()
    allowed = world_size * BF16_U * magnitude
    if got.numel() and bool((err > allowed).any()):
        i = int((err - allowed).flatten().argmax())
        raise GradeFailure(
            f"{what}: rank {rank} is wrong at flat index {i}: got "
            f"{got.flatten()[i].item()!r}, dist.all_reduce gives "
            f"{expected.flatten()[i].item()!r}, exact sum {exact.flatten()[i].item():.6g}; "
            f"bfloat16 allows an error of n * 2**-8 * sum|x| = {allowed.flatten()[i].item():.3g}")


def _reference(rank, dtype, shape, seed):
    """This rank's data, dist.all_reduce of it, the exact float64 sum and sum of |x|."""
    data = lab.make_data(rank, shape, dtype, seed)
    expected = data.clone()
    dist.all_reduce(expected)
    exact = magnitude = None
    if dtype == "bfloat16":   # one more all_reduce, for the exact sum and sum of |x|
        both = torch.stack([data.double(), data.double().abs()])
        dist.all_reduce(both)
        exact, magnitude = both[0], both[1]
    return data, expected, exact, magnitude


def _same_tensor(out, tensor):
    return (isinstance(out, torch.Tensor) and out.shape == tensor.shape
            and out.data_ptr() == tensor.data_ptr())


# ----------------------------------------------------------------------------------------
# Grader workers (module-level: workers import them by name)
# ----------------------------------------------------------------------------------------

def _wrong_on_rank_0(tensor):
    """A broken all-reduce for testing the grader: rank 0 ends up one too high."""
    dist.all_reduce(tensor)
    if dist.get_rank() == 0 and tensor.numel():
        tensor.view(-1)[-1] += 1
    return tensor


def all_reduce_grader(rank, world_size, impl, name, cases):
    fn = globals()[name] if impl == "self-test" else implementation(impl, "ring", name)
    failures = []
    for i, (dtype, shape, *extra) in enumerate(cases):
        kwargs = {"segment_bytes": extra[0]} if extra and extra[0] else {}
        what = f"case {i} ({dtype}, shape {tuple(shape)}{', ' if kwargs else ''}" \
               f"{', '.join(f'{k}={v}' for k, v in kwargs.items())}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=100 + i)
        tensor = data.clone()
        out = fn(tensor, **kwargs)
        try:
            if not _same_tensor(out, tensor):
                raise GradeFailure(f"{what}: rank {rank} must return the tensor it was given "
                                   f"(summed in place), got {type(out).__name__} "
                                   f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
            _check(tensor, expected, exact, magnitude, rank=rank, world_size=world_size,
                   what=what)
        except GradeFailure as exc:
            failures.append(str(exc))
    return failures


def reduce_scatter_grader(rank, world_size, impl):
    fn = implementation(impl, "ring", "ring_reduce_scatter")
    failures = []
    for i, (dtype, shape) in enumerate(CASES):
        what = f"case {i} ({dtype}, shape {tuple(shape)}, world_size {world_size})"
        data, expected, exact, magnitude = _reference(rank, dtype, shape, seed=300 + i)
        start, stop = lab.chunk_bounds(data.numel(), world_size)[rank]
        tensor = data.clone()
        out = fn(tensor)
        mine = tensor.view(-1)[start:stop]
        try:
            if not isinstance(out, torch.Tensor) or out.shape != mine.shape or (
                    mine.numel() and out.data_ptr() != mine.data_ptr()):
                raise GradeFailure(
                    f"{what}: rank {rank} must return the view tensor.view(-1)[{start}:{stop}] "
                    f"(its own chunk), got {type(out).__name__} "
                    f"{tuple(out.shape) if isinstance(out, torch.Tensor) else ''}")
            part = (lambda t: None if t is None else t.reshape(-1)[start:stop])
            _check(mine, part(expected), part(exact), part(magnitude), rank=rank,
                   world_size=world_size,
                   what=what + f", chunk {rank} = elements [{start}:{stop}]")
        except GradeFailure as exc:
            failures.append(str(exc))
    return failures


def _fail_if_any(results, what):
    failures = [f for per_rank in results for f in per_rank]
    if failures:
        more = f"\n... and {len(failures) - 6} more" if len(failures) > 6 else ""
        raise GradeFailure(f"{what}: {len(failures)} wrong result(s):\n"
                           + "\n".join(failures[:6]) + more)


WORLD_SIZES = [1, 2, 3, 4]


@pytest.mark.grader
@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_grade_ring_reduce_scatter(impl, world_size):
    results = grade(reduce_scatter_grader, world_size, args=(impl,), timeout=60,
                    what="ring_reduce_scatter")
    _fail_if_any(results, "ring_reduce_scatter")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_grade_ring_all_reduce(impl, world_size):
    results = grade(all_reduce_grader, world_size, args=(impl, "ring_all_reduce", CASES),
                    timeout=60, what="ring_all_reduce")
    _fail_if_any(results, "ring_all_reduce")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_grade_pipelined_ring_all_reduce(impl, world_size):
    results = grade(all_reduce_grader, world_size,
                    args=(impl, "pipelined_ring_all_reduce", PIPELINE_CASES),
                    timeout=60, what="pipelined_ring_all_reduce")
    _fail_if_any(results, "pipelined_ring_all_reduce")


# ----------------------------------------------------------------------------------------
# The graders themselves: they must catch wrong answers and say where
# ----------------------------------------------------------------------------------------

def test_check_names_rank_and_values_for_bfloat16():
    got = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    with pytest.raises(GradeFailure, match=r"rank 3 is wrong at flat index 1: got 2.0, "
                                           r"dist.all_reduce gives 3.0"):
        _check(got, torch.tensor([1.0, 3.0], dtype=torch.bfloat16),
               torch.tensor([1.0, 3.0], dtype=torch.float64),
               torch.tensor([1.0, 3.0], dtype=torch.float64),
               rank=3, world_size=4, what="case 0")
    # within n * u * sum|x|: accepted
    _check(torch.tensor([1.0, 3.0], dtype=torch.bfloat16), got, torch.tensor([1.0, 3.01],
           dtype=torch.float64), torch.tensor([1.0, 3.0], dtype=torch.float64),
           rank=0, world_size=2, what="case 0")


def test_graders_reject_a_wrong_all_reduce():
    """The lab's pass-along ring passes the grader; an all-reduce wrong on rank 0 does not."""
    results = launch(all_reduce_grader, 2, args=("labs", "pass_along_all_reduce", CASES),
                     timeout=60, quiet=True)
    assert results == [[], []]
    cases = [("int64", (5,)), ("float32", (3, 4)), ("bfloat16", (7,))]
    results = launch(all_reduce_grader, 2, args=("self-test", "_wrong_on_rank_0", cases),
                     timeout=60, quiet=True)
    assert results[1] == [] and len(results[0]) == 3
    assert results[0][0].startswith("case 0 (int64, shape (5,), world_size 2): rank 0 is "
                                    "wrong at flat index 4: got ")
    assert "dist.all_reduce gives" in results[0][2]


# ----------------------------------------------------------------------------------------
# The lesson's functions
# ----------------------------------------------------------------------------------------

def test_chunk_bounds():
    assert lab.chunk_bounds(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert lab.chunk_bounds(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert lab.chunk_bounds(0, 3) == [(0, 0)] * 3
    for numel in range(0, 30):
        for n in range(1, 6):
            b = lab.chunk_bounds(numel, n)
            sizes = [stop - start for start, stop in b]
            assert b[0][0] == 0 and b[-1][1] == numel and max(sizes) - min(sizes) <= 1
            assert all(b[i][1] == b[i + 1][0] for i in range(n - 1))


def test_ring_schedule_every_chunk_reduced_once_per_rank():
    rows = lab.ring_schedule(4)
    assert len(rows) == 6 and rows[0].startswith("step 0 (reduce-scatter")
    assert "r0: send c3, recv c2" in rows[0] and "all-gather" in rows[3]


@pytest.mark.parametrize("world_size", [2, 3])
def test_naive_and_pass_along_match_all_reduce(world_size):
    cases = [(d, s) for d in ("float32", "int64", "bfloat16") for s in ((), (1,), (5,), (2, 9))]
    results = launch(lab.compare_with_all_reduce, world_size,
                     args=(["naive", "pass-along"], cases), timeout=60, quiet=True)
    for per_rank in results:
        for (variant, dtype, shape), c in per_rank.items():
            if dtype == "int64":
                assert c["equal"] and c["err"] == 0, (variant, dtype, shape)
            elif dtype == "bfloat16":
                assert c["err"] <= c["bound"] and c["ref_err"] <= c["bound"], (variant, c)
            else:
                assert c["diff"] < 1e-5, (variant, dtype, shape, c)


def test_first_values_and_demo():
    assert launch(lab.first_values, 3, args=("naive",), timeout=60, quiet=True) == \
        [[30.0, 33.0, 36.0, 39.0, 42.0, 45.0]] * 3
    assert launch(lab.demo, 2, timeout=60, quiet=True) == [[10.0, 12.0, 14.0, 16.0, 18.0,
                                                            20.0]] * 2
    fallback = launch(lab.demo, 2, timeout=60, quiet=True, env={"P2P_COURSE_SOLUTIONS": "0"})
    assert "not written yet" in fallback[0] and "[10.0, 12.0, 14.0" in fallback[0]


def bytes_per_variant(rank, world_size, variants, numel):
    """Worker: bytes this rank's isends carried in one run of each variant (from the trace)."""
    from labs.harness import tracing
    out = {}
    for variant in variants:
        tracing.TRACER.events.clear()
        lab.run_variant(rank, world_size, variant, (numel,))
        out[variant] = lab.bytes_sent(tracing.TRACER.events)
    return out


def test_bytes_on_the_wire():
    """naive: rank 0 sends (n-1)N; pass-along: everyone (n-1)N; ring: 2(n-1)/n N each."""
    numel, n = 1200, 4
    nbytes = numel * 4
    variants = ["naive", "pass-along", "ring", "pipelined"]
    res = launch(bytes_per_variant, n, args=(variants, numel), timeout=60, quiet=True)
    sent = {v: [res[r][v] for r in range(n)] for v in variants}
    assert sent["naive"] == [(n - 1) * nbytes] + [nbytes] * (n - 1)
    assert sent["pass-along"] == [(n - 1) * nbytes] * n
    assert sent["ring"] == [2 * (n - 1) * nbytes // n] * n
    assert sent["pipelined"] == sent["ring"]
    # and bytes_sent reads a launch's merged trace the same way
    res = launch(lab.run_variant, n, args=("ring", (numel,)), timeout=60, quiet=True)
    assert [lab.bytes_sent(res.trace, r) for r in range(n)] == sent["ring"]


def test_alpha_beta_fit_and_bandwidth_definitions():
    alpha, beta = 50e-6, 2e9
    sizes = [1 << k for k in range(10, 27, 2)]
    a, b = lab.fit_alpha_beta(sizes, [alpha + s / beta for s in sizes])
    assert abs(a - alpha) / alpha < 1e-6 and abs(b - beta) / beta < 1e-6
    assert lab.busbw(1000, 1.0, 4) == 1500.0 and lab.algbw(1000, 2.0) == 500.0
    assert lab.ring_model_seconds(4000, 4, alpha, beta) == pytest.approx(
        6 * (alpha + 1000 / beta))


def test_time_variants_and_ping_pong_run():
    res = launch(lab.time_variants, 2, args=(["ring", "all_reduce"], [4096, 65536], 2, 1),
                 timeout=60, quiet=True)
    assert res[0] == res[1] and set(res[0]) == {4096, 65536}
    assert all(t > 0 for d in res[0].values() for t in d.values())
    pp = launch(lab.ping_pong, 2, args=([1024, 1 << 20], 2), timeout=60, quiet=True)
    assert set(pp[0]) == {1024, 1 << 20} and pp[1] == {}


def test_bench_ring_prints_table(tmp_path):
    from labs.harness import bench
    out = io.StringIO()
    with redirect_stdout(out):
        bench.main(["ring", "--world-sizes", "2", "--sizes", "1K,16K", "--reps", "2",
                    "--warmup", "1", "--out", str(tmp_path / "ring.png"), "--no-progress"])
    text = out.getvalue()
    assert re.search(r"ranks\s+size\s+variant\s+time", text)
    assert re.search(r"^\s*2\s+16 KiB\s+ring\s", text, re.M)
    assert "all_reduce" in text and "ring/all_reduce" in text
    assert (tmp_path / "ring.png").stat().st_size > 1000
