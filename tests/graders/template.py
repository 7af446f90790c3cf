"""Lesson NN (labs/<module>.py): the grader for swap_with_partner.

TEMPLATE. Copy to tests/graders/test_<module>.py, set LAB to the module's name, write one
test per exercise (a short list of cases, as below), and delete this paragraph. pytest
does not collect this file as it is (only test_*.py); tests/harness/test_templates.py runs
it against the template's stub and reference body. The helpers, in
labs/harness/grading, make each failure say which case, which rank, expected vs got.
Check the method the exercise teaches from each call's trace (`got.events`), not only the
values, and add the wrong bodies learners write, and one correct body in another style, to
tests/graders/bodies/<module>.py and tests/harness/catalogue/.
"""
import pytest
import torch

from labs.harness.grading import (call, check_close, check_fresh, check_one_batch,
                                  check_p2p_only, check_untouched, grade, implementation, seeded)

LAB = "harness.templates.lesson"      # the lab module's name: "ring" for labs/ring.py

# (shape, dtype): every case runs in one launch per world size. Include the edges the
# contract names: an empty tensor, a 0-d one, integers (they must match exactly).
CASES = [((4,), torch.float32), ((2, 3), torch.int64), ((), torch.float64), ((0,), torch.float32)]


def swap_worker(rank, world_size, impl):
    """Runs in each worker (module level: workers import it by name): one Call per case."""
    swap_with_partner = implementation(impl, LAB, "swap_with_partner")
    return [call(swap_with_partner, seeded(rank, shape, dtype, i, special=True), must_complete=True,
                 case=f"shape {shape}, {dtype}") for i, (shape, dtype) in enumerate(CASES)]


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_swap_with_partner(impl, world_size):
    results = grade(swap_worker, world_size, args=(impl,), what="swap_with_partner")
    check_p2p_only(results.trace, "swap_with_partner", builds="the swap")
    for i, (shape, dtype) in enumerate(CASES):
        what = f"swap_with_partner(shape {shape}, {dtype}, world_size={world_size})"
        for rank in range(world_size):
            got, partner = results[rank][i], rank ^ 1 if rank ^ 1 < world_size else rank
            check_untouched(got, rank=rank, what=what)
            check_fresh(got, rank=rank, what=what)
            check_close(got.result, seeded(partner, shape, dtype, i, special=True), rank=rank,
                        what=f"{what} (expected rank {partner}'s tensor)")
            if partner != rank:
                check_one_batch(got.events, what, rank=rank, n_ops=2,
                                expected="its send and its receive")
