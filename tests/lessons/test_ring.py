"""Lesson 05 (labs/ring.py): the lesson's worker functions, cost model and benchmark."""
import io
import re
from contextlib import redirect_stdout

import pytest

import labs.ring as lab
from labs import launch


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
    from labs.harness.ranks import tracing
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


def rotation_order(rank, world_size, reps):
    """Worker: the order in which time_on_ranks called three functions, and its result."""
    from labs.harness.ranks.measure import time_on_ranks
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in "abc"}
    return order, time_on_ranks(calls, reps, warmup=1)


def test_time_on_ranks_interleaves_and_agrees_across_ranks():
    res = launch(rotation_order, 2, args=(5,), timeout=60, quiet=True)
    order, seconds = res[0]
    # warm-up round, then 5 rounds; each round every name once, the first one rotating
    assert order[:9] == list("abc" "bca" "cab")
    assert len(order) == 18 and all(sorted(order[i:i + 3]) == list("abc") for i in range(0, 18, 3))
    assert seconds == res[1][1] and all(len(t) == 5 for t in seconds.values())


def test_sample_variants_returns_every_repetition():
    res = launch(lab.sample_variants, 2, args=(["ring", "all_reduce"], [4096], 5, 1),
                 timeout=60, quiet=True)
    assert res[0] == res[1] and list(res[0]) == [4096]
    assert all(len(t) == 5 and min(t) > 0 for t in res[0][4096].values())


def test_time_variants_and_ping_pong_run():
    res = launch(lab.time_variants, 2, args=(["ring", "all_reduce"], [4096, 65536], 2, 1),
                 timeout=60, quiet=True)
    assert res[0] == res[1] and set(res[0]) == {4096, 65536}
    assert all(t > 0 for d in res[0].values() for t in d.values())
    pp = launch(lab.ping_pong, 2, args=([1024, 1 << 20], 2), timeout=60, quiet=True)
    assert set(pp[0]) == {1024, 1 << 20} and pp[1] == {}


def test_bench_ring_prints_table(tmp_path):
    import labs.bench as bench
    out = io.StringIO()
    with redirect_stdout(out):
        bench.main(["ring", "--world-sizes", "2", "--sizes", "1K,16K", "--reps", "2",
                    "--warmup", "1", "--out", str(tmp_path / "ring.png"), "--no-progress"])
    text = out.getvalue()
    assert re.search(r"ranks\s+size\s+variant\s+time", text)
    assert re.search(r"^\s*2\s+16 KiB\s+ring\s", text, re.M)
    assert "all_reduce" in text and "ring/all_reduce" in text
    assert (tmp_path / "ring.png").stat().st_size > 1000


def test_sweep_table_and_verdicts(capsys):
    import labs.views.ring as view
    fast, slow = [0.001, 0.0011, 0.0012, 0.001, 0.001], [0.004, 0.0041, 0.0042, 0.004, 0.005]
    measured = {2: {1024: {"ring": slow, "pipelined": slow, "all_reduce": fast}}}
    view.print_sweep(measured, alpha=1e-4, beta=1e9)
    view.print_verdicts(measured)
    out = capsys.readouterr().out.splitlines()
    assert re.match(r"\s*2\s+1 KiB\s", out[2])
    assert out[-1] == ("2 ranks,   1 KiB: ring vs all_reduce: all_reduce is faster (4.1x, ranges "
                       "apart); pipelined vs ring: within noise (their ranges overlap)")
