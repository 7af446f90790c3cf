"""What the graders in tests/graders/ share: run an exercise on real workers, check it.

A grader is one test function per exercise, a short list of cases (see
tests/graders/template.py). The pieces, in the order a grader uses them:

    implementation(impl, "ring", "ring_all_reduce")   # in the worker: the body under test
    seeded(rank, shape, dtype, seed)                  # in the worker: this rank's input
    call(fn, *args)                                   # in the worker: call it, record a Call
    recording()                                       # in the worker: the calls of a block
    grade(worker, world_size, args)                   # in the test: launch, explain failures
    check_close, check_untouched, check_fresh,        # in the test: the values, and what
      check_returned_input                            #   became of the arguments
    check_batched, check_one_batch, check_p2p_only    # in the test: the method, from the trace

Every check raises GradeFailure with a message that says what was wrong: which case, which
rank, expected vs got. `make check` grades your code in labs/ (`--impl=labs`); CI grades
solutions/.
"""
from labs.harness.grading.calls import Call, call, recording, seeded
from labs.harness.grading.checks import (check_batched, check_close, check_fresh, check_one_batch,
                                         check_p2p_only, check_returned_input, check_untouched,
                                         p2p_ops)
from labs.harness.grading.run import GradeFailure, fail_if_any, grade, implementation

__all__ = ["Call", "call", "recording", "seeded", "check_batched", "check_close", "check_fresh",
           "check_one_batch", "check_p2p_only", "check_returned_input", "check_untouched",
           "p2p_ops", "GradeFailure", "fail_if_any", "grade", "implementation"]
