"""Lesson 07: graders for the P2P collectives, and the lesson's worker functions.

Each grader launches real workers (1-4 ranks); every rank runs the implementation under
test and the torch.distributed collective of the same name on the same data, for several
dtypes, shapes and roots, and returns both; the parent compares them rank by rank
(bitwise: moving data must not change it).
"""
import pytest
import torch
import torch.distributed as dist

import labs.collectives as lab
from labs import launch
from labs.harness.grading import GradeFailure, check_close, grade, implementation

DTYPES = ("float32", "bfloat16", "int64")
SHAPES = ((1,), (5,), (6, 2), (1000,))   # even and uneven splits for W = 1..4


def _roots(world_size):
    return sorted({0, world_size - 1})


def _grade_one(rank, world_size, impl, name):
    """Worker: run `name` and its built-in on every case; return [(what, got, expected, problem)]."""
    fn = implementation(impl, "collectives", name)
    records = []
    salt = 0
    for shape in SHAPES:
        for dtype_name in DTYPES:
            dtype = getattr(torch, dtype_name)
            for root in _roots(world_size) if name in ("p2p_broadcast", "p2p_gather") else [None]:
                salt += 1
                x = lab.sample(rank, shape, dtype, salt)
                before = x.clone()
                where = f", {'src' if name == 'p2p_broadcast' else 'dst'}={root}" if root is not None else ""
                what = f"{name}(shape {tuple(shape)}, {dtype_name}{where}) with world_size={world_size}"
                problem, got = None, None
                if name == "p2p_broadcast":
                    expected = x.clone()
                    dist.broadcast(expected, root)
                    ret = fn(x, root)
                    got = x
                    if ret is not x:
                        problem = "must return the tensor it was given (broadcast is in place)"
                elif name == "p2p_gather":
                    expected = lab.run_builtin("gather", x, root)
                    ret = fn(x, root)
                    if rank != root:
                        if ret is not None:
                            problem = f"returned {type(ret).__name__} on a rank that is not dst; expected None"
                    elif not isinstance(ret, (list, tuple)) or len(ret) != world_size:
                        problem = f"returned {type(ret).__name__} on dst; expected a list of {world_size} tensors"
                    else:
                        got = torch.stack(list(ret))
                elif name == "p2p_all_gather":
                    expected = lab.run_builtin("all_gather", x)
                    ret = fn(x)
                    if not isinstance(ret, (list, tuple)) or len(ret) != world_size:
                        problem = f"returned {type(ret).__name__}; expected a list of {world_size} tensors"
                    else:
                        got = torch.stack(list(ret))
                elif name == "p2p_all_to_all":
                    expected = lab.run_builtin("all_to_all", x)
                    inputs = lab.split_rows(x, world_size)
                    kept = [t.clone() for t in inputs]
                    outputs = [torch.full_like(inputs[rank], 7) for _ in range(world_size)]
                    ret = fn(outputs, inputs)
                    got = torch.cat(outputs)   # in place: read the buffers we passed
                    if ret is not outputs:
                        problem = "must return the `outputs` list it was given (filled in place)"
                    elif any(not torch.equal(a, b) for a, b in zip(inputs, kept)):
                        problem = "modified its inputs"
                else:
                    raise ValueError(name)
                if problem is None and name != "p2p_broadcast" and not torch.equal(x, before):
                    problem = "modified its input tensor"
                records.append((what, got, expected, problem))
    return records


def _check(results):
    for rank, records in enumerate(results):
        for what, got, expected, problem in records:
            if problem:
                raise GradeFailure(f"{what}: rank {rank} {problem}")
            if expected is None:
                continue
            check_close(got, expected, rank=rank, what=what, atol=0, rtol=0)


@pytest.mark.grader
@pytest.mark.parametrize("name", ["p2p_broadcast", "p2p_gather", "p2p_all_gather",
                                  "p2p_all_to_all"])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_grade(impl, name, world_size):
    _check(grade(_grade_one, world_size, args=(impl, name), what=name))


def test_check_catches_a_wrong_value():
    """The checker names the rank and the case (and would not pass a wrong gather)."""
    x = torch.arange(4.)
    with pytest.raises(GradeFailure, match="rank 2 is wrong"):
        _check([[], [], [("p2p_gather(...)", x + 1, x, None)]])
    with pytest.raises(GradeFailure, match="rank 0 must return"):
        _check([[("p2p_broadcast(...)", x, x, "must return the tensor it was given")]])


# ---------------------------------------------------------------------------------------
# The lesson's worker functions (run with the reference solutions: conftest sets
# P2P_COURSE_SOLUTIONS=1 and launch forwards it)
# ---------------------------------------------------------------------------------------

def test_check_against_builtins_all_equal():
    cases = [(op, (6,), dt, 1) for op in lab.OPS for dt in ("float32", "int64")]
    results = launch(lab.check_against_builtins, 3, args=(cases,), quiet=True)
    for rank, verdict in enumerate(results):
        for (op, _, _, root), ok in verdict.items():
            expected = None if (op == "gather" and rank != root) else True
            assert ok is expected, (rank, op, ok)


def test_show_prints_each_pattern():
    outs = {op: launch(lab.show, 3, args=(op,), quiet=True) for op in lab.OPS}
    assert outs["broadcast"] == [[0, 1]] * 3
    assert outs["gather"] == [[[0, 1], [10, 11], [20, 21]], None, None]
    assert outs["all_gather"] == [[[0, 1], [10, 11], [20, 21]]] * 3
    assert outs["all_to_all"] == [[0, 100, 200], [1, 101, 201], [2, 102, 202]]


def test_builtin_all_to_all_rejects_uneven_sizes_p2p_does_not():
    err, ours = launch(lab.uneven_all_to_all, 3, quiet=True)[1]
    assert "invalid tensor size" in err
    assert ours == [2.0, 3.0, 12.0, 13.0, 22.0, 23.0]


def test_empty_batch_raises_index_error():
    assert launch(lab.empty_batch, 1, quiet=True)[0].startswith("IndexError")


def test_ring_all_gather_trace_has_w_minus_1_batches():
    results = launch(lab.traced_all_gather, 4, quiet=True)
    for rank in range(4):
        sends = [e for e in results.trace if e.rank == rank and e.op == "isend"]
        assert [e.peer for e in sends] == [(rank + 1) % 4] * 3
        assert len({e.batch for e in sends}) == 3


def test_time_collectives_and_approaches_return_every_row():
    t = launch(lab.time_collectives, 2, args=(64, 1), quiet=True)[0]
    assert set(t) == set(lab.OPS) and all(v["p2p"] > 0 and v["builtin"] > 0 for v in t.values())
    a = launch(lab.approaches, 2, args=(32, 8, 1), quiet=True)[0]
    assert set(a["seconds"]) == set(lab.TABLE_KEYS)
    assert all(v > 0 for v in a["seconds"].values())
    assert a["same_weights"] is True


def test_demo():
    assert launch(lab.demo, 3, quiet=True) == [[0, 1, 2]] * 3
