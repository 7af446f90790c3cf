"""Lesson `deadlocks`'s learner bodies (tests/graders/bodies/deadlocks/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_deadlocks
from tests.harness.catalogue.messages import (BUILTIN, CHECKED_LATE, CONTENTS, HUNG, INTO, KEPT,
                                             ONE_BATCH, PARTNERS, STALE, UNWAITED)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks:batched_into_input",
     ("changed its argument `tensor`", "received into the memory of its argument")),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks:batched_two_batches",
     "in 2 batch_isend_irecv call(s)"),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks:batched_blocking", HUNG),
    (test_deadlocks.test_exchange_parity_ordered, 2, "deadlocks:parity_send_first_everywhere",
     HUNG),
    (test_deadlocks.test_exchange_parity_ordered, 2, "deadlocks:parity_batched",
     "expected blocking dist.send/dist.recv"),
    (test_deadlocks.test_checked_exchange, 2, "deadlocks:checked_says_mismatch",
     "must name both shapes and both dtypes"),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.unlisted2:checked_shape_after_data",
     "raised ValueError only after a send"),
    (test_deadlocks.test_exchange_batched, 4, "deadlocks.unlisted3:batched_receive_waited_only",
     "never waited for"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.unlisted3:parity_by_rank_order",
     "recv first in every exchange"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.unlisted3:checked_exchange_builtin_meta",
     BUILTIN),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.unlisted3:batched_polls_is_completed",
     "polled is_completed()"),
    (test_deadlocks.test_exchange_batched, 8, "deadlocks.unlisted7:batched_builtin_at_8", BUILTIN),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_deadlocks.test_exchange_batched, 4, "deadlocks:batched_receive_first"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks:parity_keywords"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks:checked_torch_size"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_deadlocks.test_exchange_batched, 4, "deadlocks.others:batched_tagged_reverse"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.others:parity_world_group"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.others:checked_two_by_three"),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red:checked_rank_xor", PARTNERS),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red2:batched_double_buffered", KEPT),
]

# [red teams]
RIGHT += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red2:checked_meta_blocking_then_batched"),
]

# [red teams]
# Seventh round, a fourth red team (tests/graders/bodies/<lesson>_red4.py): checked_exchange
# with dtypes of one element size, or its data outside a batch; the neighbour exchange
# ungrouped (NCCL needs the pair grouped: stages 0 and 2 are both even, so a parity order
# by global rank does not help) or on a transposed view.
WRONG += [
    (test_deadlocks.test_checked_exchange, 2, "deadlocks.red4:checked_itemsize",
     "returned instead of raising ValueError"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red4:checked_ungrouped_data", ONE_BATCH),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red4:checked_parity", ONE_BATCH),
]

# [red teams]
RIGHT += [
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.red4:parity_by_peer"),
]

# [red teams]
# Eighth round, a fifth red team (tests/graders/bodies/<lesson>_red5.py): what travels (a message
# that is a difference from the last call's, lengths in bytes, a token forwarded unchanged,
# a negated tensor: the bytes of every send are compared with the reference's); receives
# into memory the caller lent (through `.data`, numpy, a parameter); the store reached
# through torch's own helper; the product before posting; mismatches in one property only;
# an empty "handshake" that hid a step's late waits; a memo of the rank's own input; half
# precisions, a non-contiguous gradient, a plan kept from another model of the class.
WRONG += [
    (test_deadlocks.test_exchange_batched, 4, "deadlocks.red5:batched_delta_encoded", CONTENTS),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red5:exchange_numpy_scratch", INTO),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red5:checked_zip_shapes", CHECKED_LATE),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red5:checked_dtype_by_kind_and_size",
     "returned instead of raising ValueError"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red6:exchange_batched_memo_same_object",
     (STALE, HUNG)),
]

# [red teams]
RIGHT += [
    (test_deadlocks.test_exchange_parity_ordered, 2,
     "deadlocks.red6:parity_ordered_any_source_recv"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red9_early:batched_reads_before_wait",
     "its receive buffer was read (numpy)"),
    (test_deadlocks.test_checked_exchange, 2, "deadlocks.red9_early:checked_partial_shape",
     "(2, 4, 3) float32: returned instead of raising ValueError"),
    (test_deadlocks.test_exchange_batched, 3,
     "deadlocks.red9_early:batched_head_to_head_at_odd_world",
     HUNG),
]

# [ours]
RIGHT += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red9_early:checked_equal_meta"),
]

# [ours]
RIGHT += [
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.red10:parity_ordered_keywords"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red12_a:batched_nan_to_num",
     "is wrong at flat index"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red12_a:checked_meta_without_ndim",
     CHECKED_LATE),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red12_a:checked_squeezes_leading_ones",
     "returned instead of raising"),
]

# [ours]
# Round 15 (ours, tests/graders/bodies/<lesson>/red15_probe.py): the exercises the catalogue held least
# of, in kinds no list named: another algorithm (a chain, a two-way ring, a relay for small
# k), the caller's memory swapped out, sizes in a float of int64's width, one side's
# requests unwaited, the own slot the input itself, one batch per peer
WRONG += [
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.red15_probe:parity_by_lower_rank",
     "recv first in every exchange"),
    (test_deadlocks.test_exchange_parity_ordered, 4,
     "deadlocks.red15_probe:parity_isend_waited_late",
     "expected blocking dist.send/dist.recv"),
]

# [ours]
WRONG += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red15_more:checked_numel_only",
     "returned instead of raising ValueError"),
]

# [ours]
# right on a launch's first calls, wrong after a few: every call is graded, not the first
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red15_late:batched_stops_waiting_sends",
     UNWAITED),
]

# [ours]
RIGHT += [
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red15_more:checked_meta_by_parity"),
]

# [causes]
# What gloo does, in lesson 04's words (section 7: a receive buffer smaller than the message
# kills the receiver; section 6: no pair to the rank's own process), not a signal or an
# enforce line.
WRONG += [
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.causes:batched_default_dtype",
     "received a message larger than its buffer"),
]
