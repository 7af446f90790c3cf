"""Lesson 04 (labs/deadlocks.py): graders for exchange_batched, exchange_parity_ordered and
checked_exchange."""
import re

import pytest
import torch

from labs.harness.grading.inputs import every_dtype
from labs.harness.grading import (GradeFailure, call, check_close, check_fresh, check_one_batch,
                                  check_untouched, grade, implementation, in_case, p2p_ops,
                                  recording, seeded)

CASES = every_dtype([((10,), torch.float32), ((3, 4), torch.int64), ((), torch.float64),
                     ((0, 3), torch.int64)]) + \
    [(((1 << 20) + 1,), torch.float32)]   # large: the method on every size
# checked_exchange: what the odd rank of each pair passes, next to the even rank's tensor.
# Each mismatch differs in one property only: "int64 as float64" and "float16 as
# bfloat16" (element size, and kind too), bytes that mean something else; "one more
# dimension" (6,) against (6, 1), the same elements in the same order.
CHECKED = ["same", "same int64", "one element more", "float64", "transposed shape",
           "int64 as float64", "float16 as bfloat16", "one more dimension",
           "last two sizes swapped", "a size-0 dimension more", "a leading size 1"]
# Every world size up to 8 (a body may branch on the world size): with an odd one, the
# last rank has no partner of the other parity and sits out.
PAIRED_WORLD_SIZES = [2, 3, 4, 5, 6, 7, 8]


def _pairings(rank, world_size):
    """Two pairings with different parities: rank ^ 1 (0-1, 2-3) and, with 4 ranks,
    (1-2, 3-0). An odd world size: rank ^ 1 only, the last rank in none."""
    if world_size % 2:
        return [rank ^ 1] if rank ^ 1 < world_size else []
    second = (rank + (1 if rank % 2 else -1)) % world_size
    return [rank ^ 1, second]


def _checked_tensor(rank, case):
    odd = rank % 2 == 1
    shape, dtype = {"same": ((5,), torch.float32), "same int64": ((2, 3), torch.int64),
                    "one element more": ((6,) if odd else (5,), torch.float32),
                    "float64": ((5,), torch.float64 if odd else torch.float32),
                    "transposed shape": ((3, 2) if odd else (2, 3), torch.float32),
                    "int64 as float64": ((5,), torch.int64 if odd else torch.float64),
                    "float16 as bfloat16": ((5,), torch.float16 if odd else torch.bfloat16),
                    "one more dimension": ((6, 1) if odd else (6,), torch.float32),
                    "last two sizes swapped": ((2, 4, 3) if odd else (2, 3, 4),
                                               torch.float32),
                    "a size-0 dimension more": ((2, 3, 0) if odd else (2, 3), torch.float32),
                    "a leading size 1": ((1, 6) if odd else (6,), torch.float32)}[case]
    return seeded(rank, shape, dtype, CHECKED.index(case), special=True)


def exchange_worker(rank, world_size, impl, name):
    exchange = implementation(impl, "deadlocks", name)
    return [(peer, i, call(exchange, seeded(rank, shape, dtype, i, special=True), peer, must_complete=True,
                           case=f"shape {shape}, {dtype}, peer {peer}"))
            for peer in _pairings(rank, world_size) for i, (shape, dtype) in enumerate(CASES)]


def checked_worker(rank, world_size, impl):
    checked_exchange = implementation(impl, "deadlocks", "checked_exchange")
    out = []
    for peer in _pairings(rank, world_size):       # the partner is `peer`, never guessed
        for case in CHECKED:
            try:
                with in_case(f"{case}, peer {peer}"), recording() as events:
                    got = checked_exchange(_checked_tensor(rank, case), peer)
                out.append((peer, "returned", got, events))
            except ValueError as exc:
                out.append((peer, "ValueError", str(exc), []))
    return out


def _check_exchanges(results, world_size, name):
    for rank in range(world_size):
        for peer, i, got in results[rank]:
            shape, dtype = CASES[i]
            what = f"{name}(shape {shape}, {dtype}, peer={peer}, world_size={world_size})"
            check_untouched(got, rank=rank, what=what)
            check_fresh(got, rank=rank, what=what)
            check_close(got.result, seeded(peer, shape, dtype, i, special=True), rank=rank,
                        what=f"{what} (expected rank {peer}'s tensor)")


@pytest.mark.parametrize("world_size", PAIRED_WORLD_SIZES)
def test_exchange_batched(impl, world_size):
    results = grade(exchange_worker, world_size, args=(impl, "exchange_batched"),
                    what="exchange_batched")
    _check_exchanges(results, world_size, "exchange_batched")
    for rank in range(world_size):
        for peer, i, got in results[rank]:
            check_one_batch(got.events, f"exchange_batched(peer={peer})", rank=rank, n_ops=2,
                            expected="the send and the receive")


@pytest.mark.parametrize("world_size", PAIRED_WORLD_SIZES)
def test_exchange_parity_ordered(impl, world_size):
    results = grade(exchange_worker, world_size, args=(impl, "exchange_parity_ordered"),
                    what="exchange_parity_ordered")
    _check_exchanges(results, world_size, "exchange_parity_ordered")
    for rank in range(world_size):
        if not _pairings(rank, world_size):
            continue                    # the rank that sits out
        ops = [e.op for e in sorted(p2p_ops(results.trace, rank), key=lambda e: e.t_post)]
        expected = (["send", "recv"] if rank % 2 == 0 else ["recv", "send"]) * (len(ops) // 2)
        if ops != expected or not ops:
            raise GradeFailure(
                f"exchange_parity_ordered: rank {rank} ({'even' if rank % 2 == 0 else 'odd'}) "
                f"called {ops[:4]}{'...' if len(ops) > 4 else ''}; expected blocking "
                f"dist.send/dist.recv, {'send first' if rank % 2 == 0 else 'recv first'} "
                f"in every exchange")


@pytest.mark.parametrize("world_size", PAIRED_WORLD_SIZES)
def test_checked_exchange(impl, world_size):
    results = grade(checked_worker, world_size, args=(impl,), what="checked_exchange")
    for rank in range(world_size):
        for case, (peer, kind, value, events) in zip(CHECKED * 2, results[rank]):
            mine, theirs = _checked_tensor(rank, case), _checked_tensor(peer, case)
            what = (f"checked_exchange: rank {rank} with {tuple(mine.shape)} {mine.dtype}, "
                    f"peer {peer} with {tuple(theirs.shape)} {theirs.dtype}")
            if case.startswith("same"):
                if kind != "returned":
                    raise GradeFailure(f"{what}: raised ValueError({value!r}) although shapes "
                                       f"and dtypes match")
                check_close(value, theirs, rank=rank, what=what)
                data = p2p_ops(events)[-2:]       # the data, after the metadata: one batch
                if len(data) < 2 or None in {e.batch for e in data} or \
                        len({e.batch for e in data}) != 1:
                    raise GradeFailure(f"{what}: rank {rank} posted the data's send and "
                                       f"receive outside one batch_isend_irecv call; post "
                                       f"them in ONE batch, like exchange_batched")
                continue
            if kind != "ValueError":
                raise GradeFailure(f"{what}: returned instead of raising ValueError")
            missing = [f"{tuple(t.shape)} {t.dtype}" for t in (mine, theirs)
                       if not _names(value, t)]
            if missing:
                raise GradeFailure(f"{what}: the ValueError must name both shapes and both "
                                   f"dtypes (any wording); {missing[0]} is missing from "
                                   f"{value!r}")


def _names(message, tensor):
    """The message names `tensor`'s dtype (float64 or torch.float64) and its shape, as its
    sizes in order: (3, 2), [3, 2], torch.Size([3, 2]), 3x2 ..."""
    numbers = " ".join(re.findall(r"\d+", message))
    sizes = " ".join(str(s) for s in tensor.shape)
    return (str(tensor.dtype).removeprefix("torch.") in message
            and f" {sizes} " in f" {numbers} ")
