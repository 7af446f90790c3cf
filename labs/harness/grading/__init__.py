"""What the graders in tests/graders/ share: run an exercise on real workers, check it.

The design, in four pieces:
  * record.py:  the complete record of a rank's communication, taken at the dispatcher
                (every c10d op, whatever Python function made it), with each request's
                wait and each buffer's state between post and wait;
  * methods.py: each exercise's method: its reference solution and what may vary;
  * compare.py: the learner's record against the reference's, per rank: partners,
                directions, sizes, dtypes, number and order of messages, collectives;
  * graded.py:  `implementation()` hands the grader a GradedBody: every call runs the
                reference on copies of the same inputs, then the body, and checks what
                holds for every exercise (compare, every request waited, no buffer written
                in flight, arguments untouched unless written in place, results not
                aliased to arguments nor reused by a later call: again.py, the
                second call).
A grader (one test function per exercise, a short list of cases, see
tests/graders/template.py) adds what is particular to its exercise: the values, and the
lesson's own points (one batch, overlap) from the timeline trace. In order of use:

    implementation(impl, "ring", "ring_all_reduce")   # in the worker: the body under test
    seeded(rank, shape, dtype, seed)                  # in the worker: this rank's input
                                                      #   (inputs.py: no body can rebuild it)
    watched(weight)                                   #   a tensor whose products get traced
    call(fn, *args, case="...")                       # in the worker: call it, record a Call
    recording()                                       # in the worker: the calls of a block
    grade(worker, world_size, args, what=...)         # in the test: launch, explain failures
    check_close, check_untouched, check_fresh,        # in the test: the values, and what
      check_returned_input, check_filled              #   became of the arguments (checks.py)
    check_p2p_only, check_batched, check_one_batch,   # in the test: the method, from the
      check_messages, check_peers, check_overlap      #   trace (method.py)

Every check raises GradeFailure with a message that says what was wrong: which case, which
rank, expected vs got, and what the lesson expected. A deadlock is reported as "hung" once
every rank has sat waiting for HANG_SECONDS with nothing moving, with what each rank was
blocked in. `make check`
grades your code in labs/ (`--impl=labs`); CI grades solutions/. `make mutants` proves the
graders on wrong bodies generated from the references (tests/mutation.py).
"""
from labs.harness.grading.calls import WATCHED_LABEL, Call, call, in_case, recording, watched
from labs.harness.grading.checks import (check_close, check_filled, check_fresh,
                                         check_returned_input, check_same_on_every_rank,
                                         check_untouched, non_contiguous_case,
                                         rounding_unit)
from labs.harness.grading.method import (check_batched, check_messages, check_one_batch,
                                         check_overlap, check_p2p_only, check_peers,
                                         p2p_ops)
from labs.harness.grading.graded import implementation
from labs.harness.grading.run import HANG_SECONDS, GradeFailure, fail_if_any, grade
from labs.harness.grading.inputs import seeded

__all__ = ["WATCHED_LABEL", "Call", "call", "in_case", "recording", "seeded", "watched", "check_close",
           "check_filled", "check_fresh", "non_contiguous_case", "check_returned_input", "check_untouched",
           "check_same_on_every_rank", "rounding_unit",
           "check_batched", "check_messages", "check_one_batch", "check_overlap",
           "check_p2p_only", "check_peers", "p2p_ops", "HANG_SECONDS",
           "GradeFailure", "fail_if_any", "grade", "implementation"]
