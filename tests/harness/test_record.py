"""The graders' record is complete: every public way torch 2.13 offers to communicate, called
on real gloo workers, is recorded as what it is (tests/harness/record_calls.py lists them)."""
import inspect

import torch.distributed as dist
import torch.distributed._functional_collectives as fc
import torch.distributed.nn.functional as dnn

from labs import launch
from tests.harness.record_calls import CALLS, record_worker

# Public callables that move no data between ranks: set-up, queries, autograd plumbing.
NOT_CALLS = {
    "dist": {"breakpoint", "destroy_process_group", "get_backend", "get_backend_config",
             "get_default_backend_for_device", "GroupName", "get_debug_level",
             "set_debug_level", "set_debug_level_from_env", "get_global_rank", "get_group_rank",
             "get_node_local_rank", "get_pg_count", "get_process_group_ranks", "get_rank",
             "get_world_size", "init_device_mesh", "init_process_group", "is_available",
             "is_backend_available", "is_gloo_available", "is_initialized",
             "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
             "is_ucc_available", "is_xccl_available", "new_group", "new_subgroups",
             "new_subgroups_by_enumeration", "record_comm", "register_rendezvous_handler",
             "rendezvous", "shrink_group", "split_group", "supports_complex"},
    "dnn": set(),
    "fc": {"wait_tensor", "allow_inflight_collective_as_graph_input_ctx"},
    "pg": {"abort", "bound_device_id", "boxed", "get_group_store", "group_desc", "group_name",
           "merge_remote_group", "name", "rank", "set_timeout", "shutdown", "size",
           "split_group", "unbox", "use_pg_for_symm_mem_rendezvous"},
}


def _public(prefix, namespace, own_module=None):
    names = set()
    for name in dir(namespace):
        value = getattr(namespace, name, None)
        if name.startswith("_") or not callable(value) or inspect.isclass(value):
            continue
        if own_module and getattr(value, "__module__", own_module) != own_module:
            continue
        if name.endswith(("_backward", "_setup_context")):    # autograd's halves of a call
            continue
        names.add(name)
    return {f"{prefix}.{n}" for n in names - NOT_CALLS[prefix]}


def test_every_communicating_callable_is_in_the_table():
    found = (_public("dist", dist) | _public("dnn", dnn, dnn.__name__)
             | _public("fc", fc, fc.__name__)
             | {f"pg.{n}" for n in dir(dist.ProcessGroup)
                if not n.startswith("_") and callable(getattr(dist.ProcessGroup, n))
                and not inspect.isclass(getattr(dist.ProcessGroup, n))
                and not n.isupper() and n not in NOT_CALLS["pg"]})
    missing = sorted(found - set(CALLS))
    assert not missing, (f"torch has ways to communicate that tests/harness/record_calls.py "
                         f"does not try: {missing}")


def test_every_call_is_recorded_as_what_it_is():
    results = launch(record_worker, 2, args=(sorted(CALLS),), timeout=90, quiet=True)
    wrong = []
    for name, (expected, _) in sorted(CALLS.items()):
        for rank in range(2):
            got = results[rank][name]
            if isinstance(got, str):
                wrong.append(f"{name} (rank {rank}) raised {got}")
            elif expected in ("send", "recv"):
                if {kind for kind, _, _ in got} - {"send", "recv"} or not got:
                    wrong.append(f"{name} (rank {rank}): {got}")
            elif not got or {n for _, n, _ in got} - {expected, "all_gather", "broadcast",
                                                      "scatter", "gather"}:
                wrong.append(f"{name} (rank {rank}): expected {expected}, recorded {got}")
            elif expected not in {n for _, n, _ in got} and name != "dnn.all_to_all":
                wrong.append(f"{name} (rank {rank}): expected {expected}, recorded {got}")
            elif not all(waited for _, _, waited in got):
                wrong.append(f"{name} (rank {rank}): waited but not seen waited: {got}")
    assert not wrong, "\n".join(wrong)


def test_barrier_is_recorded_as_sync_not_a_collective():
    results = launch(record_worker, 2, args=(["dist.barrier", "pg.barrier"],), quiet=True)
    assert results[0]["dist.barrier"] == [("sync", "barrier", True)]
    assert results[1]["pg.barrier"] == [("sync", "barrier", True)]


def test_same_bytes_compares_every_bit_at_any_offset():
    """The record's buffer check (a send buffer written in flight, lent memory written)
    compares bits, as machine words where it can: views at odd offsets and odd sizes, NaN,
    -0.0 and every dtype width must still compare right."""
    import torch
    from labs.harness.grading.buffers import same_bytes
    base = torch.randn(41)
    for view in (base[1:19], base[:18], base[3:40], base[5:6], base[:0]):
        assert same_bytes(view, view.clone())
    assert not same_bytes(base[1:19], base[2:20])
    nan = torch.tensor([float("nan"), 0.0, 1.0])
    assert same_bytes(nan, nan.clone())
    zero = nan.clone()
    zero[1] = -0.0
    assert not same_bytes(nan, zero)
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.bool):
        t = torch.ones(7, dtype=dtype)
        other = t.clone()
        other[6] = 0
        assert same_bytes(t, t.clone()) and not same_bytes(t, other)
    assert same_bytes(base[1:10].reshape(3, 3).t(), base[1:10].reshape(3, 3).t().contiguous())
    assert not same_bytes(base[:4], base[:4].double())


def test_smallest_distinct_agrees_with_torch_unique():
    """The record keeps a message's smallest distinct values without sorting all of it; on
    every kind of message (few values, many, a varied tail, NaN, inf, -0.0) it must return
    what torch.unique would."""
    import torch
    from labs.harness.grading.buffers import smallest_distinct
    g = torch.Generator().manual_seed(0)
    n = 50_000
    few = torch.randint(0, 5, (n,), generator=g).double()
    tail = torch.zeros(n, dtype=torch.float64)
    tail[-9:] = torch.arange(9, 0, -1, dtype=torch.float64) - 20
    odd = torch.randn(n, generator=g, dtype=torch.float64)
    odd[::7] = float("nan")
    odd[1::11] = float("inf")
    odd[2::13] = -0.0
    for x in (few, tail, odd, torch.randn(n, generator=g, dtype=torch.float64),
              torch.full((n,), 3.0, dtype=torch.float64), few[:100]):
        for k in (1, 4, 9):
            want = torch.unique(x).tolist()[:k]
            got = smallest_distinct(x, k)
            assert len(got) == len(want)
            assert all(a == b or (a != a and b != b) for a, b in zip(got, want)), (got, want)
