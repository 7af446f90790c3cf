"""Lesson 07 (labs/collectives.py): the lesson's worker functions (run with the reference
solutions: conftest sets P2P_COURSE_SOLUTIONS=1 and launch forwards it)."""
import labs.collectives as lab
from labs import launch


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
    t = launch(lab.time_collectives, 2, args=(64, 2), quiet=True)
    assert t[0] == t[1], "every rank returns the slowest rank's times"
    assert set(t[0]) == set(lab.OPS)
    assert all(len(s) == 2 and min(s) > 0 for v in t[0].values() for s in v.values())
    a = launch(lab.approaches, 2, args=(32, 8, 2), quiet=True)[0]
    assert set(a["seconds"]) == set(lab.TABLE_KEYS)
    assert all(len(s) == 2 and min(s) > 0 for s in a["seconds"].values())
    assert a["same_weights"] is True and a["buckets"] == {"DDP": 1, "DDP, small buckets": 3}


def test_approaches_table_has_a_computed_verdict_per_row():
    import labs.views.collectives as view
    fast, slow = [0.001] * 5, [0.003] * 5
    seconds = {k: slow for k in lab.TABLE_KEYS} | {"compute only, no sync": fast}
    costs = {op: {"p2p": fast, "builtin": [0.0011] * 5} for op in ("broadcast", "gather")}
    use = dict.fromkeys(["DDP", "DDP with bucketing", "all_reduce", "broadcast", "gather",
                         "batch_isend_irecv"], "x")
    table = view.approaches_table({"seconds": seconds, "bytes": 10**6,
                                   "buckets": {"DDP": 1, "DDP, small buckets": 3}}, costs, use)
    rows = table.splitlines()[2:]
    assert len(rows) == 6
    assert "compute only, no sync is faster (3x, ranges apart)" in rows[0]
    assert "within noise" in rows[1]
    assert "p2p_broadcast is faster (1.1x, ranges apart)" in rows[3]


def test_demo():
    assert launch(lab.demo, 3, quiet=True) == [[0, 1, 2]] * 3
