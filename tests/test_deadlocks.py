"""Lesson 04 (labs/deadlocks.py): graders for exchange_batched, exchange_parity_ordered and
checked_exchange, and the catalogue's behaviour: each hang is diagnosed, each error and
each silent corruption is what the notebook says."""
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import labs.deadlocks as lab
from labs import HangError, WorkerError, launch
from labs.harness import tracing
from labs.harness.grading import GradeFailure, check_close, grade, implementation

CASES = [((10,), torch.float32), ((3, 4), torch.int64), ((), torch.float64),
         ((100_000,), torch.float32)]
P2P = ("send", "recv", "isend", "irecv")
# checked_exchange: (name, what the odd rank of each pair passes instead of rank 0's kind)
CHECKED = ["same", "same int64", "one element more", "float64", "transposed shape"]


def _tensor(rank, case, shape, dtype):
    g = torch.Generator().manual_seed(500 * case + rank)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def _pairings(rank, world_size):
    """Two pairings with different parities: rank ^ 1 (0-1, 2-3) and, with 4 ranks,
    (1-2, 3-0)."""
    second = (rank + (1 if rank % 2 else -1)) % world_size
    return [rank ^ 1, second]


def _checked_tensor(rank, case):
    odd = rank % 2 == 1
    if case == "same":
        return _tensor(rank, 0, (5,), torch.float32)
    if case == "same int64":
        return _tensor(rank, 1, (2, 3), torch.int64)
    if case == "one element more":
        return _tensor(rank, 2, (6,) if odd else (5,), torch.float32)
    if case == "float64":
        return _tensor(rank, 3, (5,), torch.float64 if odd else torch.float32)
    return _tensor(rank, 4, (3, 2) if odd else (2, 3), torch.float32)   # same numel


def _require_complete(name):
    """In a worker, after the call: no non-blocking op of the call may still be in flight."""
    in_flight = [e.describe() for e in tracing.TRACER.outstanding()]
    if in_flight:
        raise AssertionError(f"{name} returned with {len(in_flight)} op(s) still in flight "
                             f"({'; '.join(in_flight)}): wait() for every Work before returning")


# -- grader workers (module level: workers import them by name) -----------------------------

def exchange_worker(rank, world_size, impl, name):
    exchange = implementation(impl, "deadlocks", name)
    out = []
    for peer in _pairings(rank, world_size):
        for i, (shape, dtype) in enumerate(CASES):
            mine = _tensor(rank, i, shape, dtype)
            before = mine.clone()
            got = exchange(mine, peer)
            _require_complete(name)
            fresh = isinstance(got, torch.Tensor) and got.data_ptr() != mine.data_ptr()
            out.append((peer, i, got, torch.equal(mine, before), fresh))
    return out


def checked_worker(rank, world_size, impl):
    checked_exchange = implementation(impl, "deadlocks", "checked_exchange")
    out = []
    for case in CHECKED:
        try:
            out.append(("returned", checked_exchange(_checked_tensor(rank, case), rank ^ 1)))
        except ValueError as exc:
            out.append(("ValueError", str(exc)))
    return out


# -- graders -------------------------------------------------------------------------------

def _check_exchanges(results, world_size, name):
    for rank in range(world_size):
        for peer, i, got, untouched, fresh in results[rank]:
            shape, dtype = CASES[i]
            what = f"{name}(shape {shape}, {dtype}, peer={peer}, world_size={world_size})"
            if not untouched:
                raise GradeFailure(f"{what}: rank {rank}'s input tensor changed; it must not")
            if not fresh:
                raise GradeFailure(f"{what}: rank {rank} must return a new tensor")
            check_close(got, _tensor(peer, i, shape, dtype), rank=rank,
                        what=f"{what} (expected rank {peer}'s tensor)")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [4])
def test_exchange_batched(impl, world_size):
    results = grade(exchange_worker, world_size, args=(impl, "exchange_batched"),
                    what="exchange_batched")
    _check_exchanges(results, world_size, "exchange_batched")
    loose = [e for e in results.trace if e.op in P2P and e.batch is None]
    if loose:
        raise GradeFailure(f"exchange_batched: rank {loose[0].rank} called "
                           f"{loose[0].describe()} outside dist.batch_isend_irecv; post both "
                           f"ops in one batch")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [4])
def test_exchange_parity_ordered(impl, world_size):
    results = grade(exchange_worker, world_size, args=(impl, "exchange_parity_ordered"),
                    what="exchange_parity_ordered")
    _check_exchanges(results, world_size, "exchange_parity_ordered")
    for rank in range(world_size):
        ops = [e.op for e in sorted(results.trace, key=lambda e: e.t_post)
               if e.rank == rank and e.op in P2P]
        expected = (["send", "recv"] if rank % 2 == 0 else ["recv", "send"]) * (len(ops) // 2)
        if ops != expected or not ops:
            raise GradeFailure(
                f"exchange_parity_ordered: rank {rank} ({'even' if rank % 2 == 0 else 'odd'}) "
                f"called {ops[:4]}{'...' if len(ops) > 4 else ''}; expected blocking "
                f"dist.send/dist.recv, {'send first' if rank % 2 == 0 else 'recv first'} "
                f"in every exchange")


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [4])
def test_checked_exchange(impl, world_size):
    # A one-sided error makes the other rank wait: keep gloo's timeout short.
    results = grade(checked_worker, world_size, args=(impl,), timeout=20, pg_timeout=5,
                    what="checked_exchange")
    for rank in range(world_size):
        peer = rank ^ 1
        for case, (kind, value) in zip(CHECKED, results[rank]):
            mine, theirs = _checked_tensor(rank, case), _checked_tensor(peer, case)
            what = (f"checked_exchange: rank {rank} with {tuple(mine.shape)} {mine.dtype}, "
                    f"peer {peer} with {tuple(theirs.shape)} {theirs.dtype}")
            if case.startswith("same"):
                if kind != "returned":
                    raise GradeFailure(f"{what}: raised ValueError({value!r}) although shapes "
                                       f"and dtypes match")
                check_close(value, theirs, rank=rank, what=what)
                continue
            if kind != "ValueError":
                raise GradeFailure(f"{what}: returned instead of raising ValueError")
            for described in (mine, theirs):
                named = (str(tuple(described.shape)) in value if mine.dtype == theirs.dtype
                         else str(described.dtype).replace("torch.", "") in value)
                if not named:
                    raise GradeFailure(f"{what}: the ValueError must name both sides' shapes "
                                       f"and dtypes; got {value!r}")


def test_graders_fail_on_stubs():
    for name in ("exchange_batched", "exchange_parity_ordered"):
        with pytest.raises(GradeFailure, match="not implemented yet"):
            grade(exchange_worker, 2, args=("labs", name), what=name)
    with pytest.raises(GradeFailure, match="not implemented yet"):
        grade(checked_worker, 2, args=("labs",), what="checked_exchange")


# -- the catalogue ---------------------------------------------------------------------------

HANGS = [
    (lab.head_to_head, 2, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                           "rank 1: blocked in send(to 0, tag 0, 10 x float32)"]),
    (lab.ring_of_blocking_sends, 3, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                                     "rank 1: blocked in send(to 2, tag 0, 10 x float32)",
                                     "rank 2: blocked in send(to 0, tag 0, 10 x float32)"]),
    (lab.unmatched_recv, 2, ["rank 0: blocked in barrier()",
                             "rank 1: blocked in recv(from 0, tag 0, 10 x float32)"]),
    (lab.tag_mismatch, 2, ["rank 0: blocked in send(to 1, tag 1, 10 x float32)",
                           "rank 1: blocked in recv(from 0, tag 2, 10 x float32)"]),
    (lab.mismatched_order, 2, ["rank 0: blocked in send(to 1, tag 0, 10 x float32)",
                               "rank 1: blocked in recv(from 0, tag 1, 10 x float32)"]),
]


def _hang_brief(fn, world_size):
    try:
        launch(fn, world_size, args=(10,), quiet=True, **lab.HANG)
    except HangError as exc:
        return exc.brief()
    return "no hang"


def test_every_hang_pattern_is_diagnosed():
    # Each hang costs its 1.5 s timeout; the launches are independent, so run them together.
    with ThreadPoolExecutor(len(HANGS)) as pool:
        briefs = list(pool.map(lambda h: _hang_brief(h[0], h[1]), HANGS))
    for (fn, _, expected), brief in zip(HANGS, briefs):
        assert brief.splitlines() == [f"  {line}" for line in expected], (fn.__name__, brief)


def test_blocking_exchange_deadlocks_and_the_fixes_do_not(monkeypatch):
    with pytest.raises(HangError) as info:
        launch(lab.exchange_run, 2, args=("blocking", 10), quiet=True, **lab.HANG)
    assert "rank 1: blocked in send(to 0, tag 0, 10 x float32)" in info.value.brief()
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    for how in ("batched", "parity", "checked"):
        results = launch(lab.exchange_run, 4, args=(how, 1000), quiet=True)
        assert not lab.corruption(results) and all(isinstance(r, dict) for r in results), how


def test_self_send_fails_at_the_call():
    with pytest.raises(WorkerError) as info:
        launch(lab.send_to_self, 2, quiet=True)
    assert info.value.ranks == [0, 1]
    assert all("Pair is not connected" in c for c in info.value.causes.values())
    with pytest.raises(WorkerError) as info:
        launch(lab.blocking_send_to_self, 2, quiet=True)
    assert all(c.startswith("ValueError: Invalid destination rank")
               for c in info.value.causes.values())


def test_size_and_dtype_mismatches_are_silent():
    got = {fn.__name__: launch(fn, 2, args=(4,), quiet=True)[1]["got"]
           for fn in (lab.larger_recv_buffer, lab.other_dtype_same_bytes,
                      lab.float32_into_float64)}
    assert got["larger_recv_buffer"].tolist() == [0.0, 1.0, 2.0, 3.0, -1.0, -1.0]
    assert got["other_dtype_same_bytes"].tolist() == [0, 1065353216, 1073741824, 1077936128]
    assert got["float32_into_float64"].tolist()[2:] == [-1.0, -1.0]
    assert got["float32_into_float64"][0].item() == 0.0078125   # bits of (0.0f, 1.0f)


def test_smaller_recv_buffer_kills_the_receiver():
    with pytest.raises(WorkerError) as info:
        launch(lab.smaller_recv_buffer, 2, args=(10,), quiet=True)
    assert info.value.ranks == [1]
    assert info.value.causes[1] == "was killed by signal SIGABRT"
    assert lab.abort_reason(info.value).startswith(
        "op.preamble.length <= op.nbytes. 40 vs 20. Received data size doesn't match")


def test_timeout_closes_the_pair():
    results = launch(lab.timeout_closes_pair, 2, quiet=True)
    assert results[0] == [
        "wait(timeout=1 s): Timed out waiting 1000ms for recv operation to complete",
        "send to rank 1: Application timeout caused pair closure",
        "barrier: Application timeout caused pair closure"]
    assert results[1] == ["recv from rank 0: Connection closed by peer"]


def test_checked_exchange_raises_on_both_ranks(monkeypatch):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    with pytest.raises(WorkerError) as info:
        launch(lab.checked_run, 2, args=("shape",), quiet=True)
    assert info.value.ranks == [0, 1]
    assert all(c.startswith("ValueError: checked_exchange") for c in info.value.causes.values())


def test_explore_reports_each_kind_of_outcome(monkeypatch, capsys):
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    expected = {"batched exchange (exercise 1)": "ok",
                "float32 into float64": "silent corruption",
                "send to self": "error",
                "recv buffer smaller": "error",
                "tag mismatch": "hang"}
    for pattern, outcome in expected.items():
        assert lab.explore(pattern, world_size=3, numel=10, plot=False) == outcome, pattern
    out = capsys.readouterr().out
    assert "rank 1: received 10 x float32 [0, 1, 2, 3, ...]: correct" in out
    assert "rank 2: no receive to check" in out           # odd world size: rank 2 sits out
    assert "rank 1: was killed by signal SIGABRT" in out
    assert "rank 1: blocked in recv(from 0, tag 2, 10 x float32)" in out
    with pytest.raises(ValueError, match="unknown pattern"):
        lab.explore("no such pattern")


def test_explorer_widget_runs_real_workers(capsys):
    import ipywidgets as widgets
    box = lab.explorer()
    controls = {type(w).__name__: w for row in box.children[:2] for w in row.children}
    assert controls["Dropdown"].description == "pattern"
    assert controls["IntSlider"].description == "world size"
    assert controls["SelectionSlider"].description == "numel"
    assert controls["Button"].description == "Run"
    assert isinstance(box.children[2], widgets.Output)
    controls["Dropdown"].value = "send to self"
    controls["Button"].click()          # outside a kernel the Output prints to stdout
    assert "send to self: world size 2, numel 10" in capsys.readouterr().out


@pytest.mark.parametrize("world_size", [2, 3])
def test_demo(world_size):
    results = launch(lab.demo, world_size, quiet=True)
    for rank, text in enumerate(results):
        prev = (rank - 1) % world_size
        assert text == f"got {[1000.0 * prev + i for i in range(3)]} from rank {prev}"
