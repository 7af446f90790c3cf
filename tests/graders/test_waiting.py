"""Lesson 03 (labs/waiting.py): graders for safe_ring_shift and overlapped_step."""
import time

import pytest
import torch

from labs.harness.grading.inputs import every_dtype
from labs.harness.grading import (WATCHED_LABEL, call, check_close, check_fresh, check_overlap,
                                  check_p2p_only, check_untouched, grade, implementation, seeded,
                                  watched)

# (shape, dtype) cases every safe_ring_shift launch runs one after the other.
SHIFT_CASES = every_dtype([((16,), torch.float32), ((3, 4), torch.int64), ((), torch.float64),
                           ((0, 2), torch.float32)]) + [((1 << 20,), torch.float32),
                                                        ((0, 3), torch.int64)]   # empty, not float
# (n, k, m, dtype): block (n, k) @ weight (k, m).
STEP_CASES = [(64, 32, 16, torch.float32), (300, 128, 64, torch.float64)]


def safe_ring_shift_worker(rank, world_size, impl):
    safe_ring_shift = implementation(impl, "waiting", "safe_ring_shift")
    calls = []
    for i, (shape, dtype) in enumerate(SHIFT_CASES):
        if i == len(SHIFT_CASES) - 1 and rank == world_size - 1:
            time.sleep(0.2)   # a slow rank: results must be complete on return, not later
        calls.append(call(safe_ring_shift, seeded(rank, shape, dtype, i, special=True), must_complete=True,
                          case=f"shape {shape}, {dtype}"))
    return calls


def _block(rank, case, n, k, dtype):
    return seeded(rank, (n, k), dtype, seed=10 + case)


def _weight(case, k, m, dtype):
    return seeded(0, (k, m), dtype, seed=20 + case)       # the same on every rank


def overlapped_step_worker(rank, world_size, impl):
    overlapped_step = implementation(impl, "waiting", "overlapped_step")
    out = []
    for i, (n, k, m, dtype) in enumerate(STEP_CASES):
        recv_buf = torch.full((n, k), -1.0, dtype=dtype)
        # The weight reports its matmuls to the trace: when the compute ran, whatever it called.
        done = call(overlapped_step, _block(rank, i, n, k, dtype),
                    watched(_weight(i, k, m, dtype)), recv_buf, must_complete=True,
                    case=f"block {n}x{k}, weight {k}x{m}, {dtype}")
        out.append((done, recv_buf))
    return out


@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_safe_ring_shift(impl, world_size):
    results = grade(safe_ring_shift_worker, world_size, args=(impl,), what="safe_ring_shift")
    for i, (shape, dtype) in enumerate(SHIFT_CASES):
        what = f"safe_ring_shift(shape {shape}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            got = results[rank][i]
            check_untouched(got, rank=rank, what=what, hint=(
                "receive into a second buffer: receiving into the tensor you send is the "
                "race of notebook 03, section 3"))
            check_fresh(got, rank=rank, what=what)
            prev = (rank - 1) % world_size
            check_close(got.result, seeded(prev, shape, dtype, i, special=True), rank=rank,
                        what=f"{what} (expected rank {prev}'s tensor)")


@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_overlapped_step(impl, world_size):
    results = grade(overlapped_step_worker, world_size, args=(impl,), what="overlapped_step")
    for i, (n, k, m, dtype) in enumerate(STEP_CASES):
        what = f"overlapped_step(block {n}x{k}, weight {k}x{m}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            got, received = results[rank][i]
            check_untouched(got, rank=rank, what=what, writes=(2,))   # it fills recv_buf
            check_close(got.result, _block(rank, i, n, k, dtype) @ _weight(i, k, m, dtype),
                        rank=rank, what=f"{what}: the returned product block @ weight",
                        atol=1e-4, rtol=1e-4)
            prev = (rank - 1) % world_size
            check_close(received, _block(prev, i, n, k, dtype), rank=rank,
                        what=f"{what}: recv_buf (expected rank {prev}'s block)")
            check_p2p_only(got.events, what, builds="the transfer")
            check_overlap(got.events, what, rank=rank, label=WATCHED_LABEL, task="block @ weight")
