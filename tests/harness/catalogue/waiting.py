"""Lesson `waiting`'s learner bodies (tests/graders/bodies/waiting/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_waiting
from tests.harness.catalogue.messages import (BORROWED, BUILTIN, CONTENTS, INTO, KEPT, LATE,
                                             PRIVATE, UNWAITED)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_waiting.test_safe_ring_shift, 2, "waiting:shift_not_waited",
     ("still in flight", "never waited for")),
    # the race: either the input is left changed, or (its own data came back) the result is wrong
    (test_waiting.test_safe_ring_shift, 2, "waiting:shift_into_input",
     ("changed `tensor`", "is wrong at flat index", "received into the memory of its argument",
      "written before the send was waited", "changed its argument `tensor`")),
    (test_waiting.test_overlapped_step, 2, "waiting:step_compute_first", "before posting"),
    (test_waiting.test_overlapped_step, 2, "waiting:step_compute_after_wait",
     "before computing block @ weight"),
    (test_waiting.test_overlapped_step, 2, "waiting:step_blocking", "used send(to 1"),
]

# [lesson]
# The kinds no grader names (tests/graders/bodies/<lesson>/unlisted.py): caught from the record and
# the reference, in general.
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.unlisted:shift_all_to_all", BUILTIN),
    (test_waiting.test_safe_ring_shift, 2, "waiting.unlisted:shift_sends_never_waited",
     "never waited for"),
    (test_waiting.test_safe_ring_shift, 2, "waiting.unlisted:shift_cached_result",
     "changed what an earlier call returned"),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.unlisted2:shift_thread_all_to_all", BUILTIN),
    (test_waiting.test_safe_ring_shift, 2, "waiting.unlisted2:shift_polls_is_completed",
     "polled is_completed()"),
    (test_waiting.test_safe_ring_shift, 2, "waiting.unlisted2:shift_cached_when_large",
     "changed what an earlier call returned"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.unlisted3:shift_as_bytes", "64 x uint8"),
    (test_waiting.test_overlapped_step, 2, "waiting.unlisted4:step_pg_waits_first",
     "before computing"),
    (test_waiting.test_overlapped_step, 2, "waiting.unlisted5:step_dummy_compute_in_flight",
     "before posting"),
    (test_waiting.test_safe_ring_shift, 5, "waiting.unlisted7:shift_builtin_beyond_4", BUILTIN),
    (test_waiting.test_overlapped_step, 6, "waiting.unlisted7:step_blocking_beyond_4",
     "before computing"),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.unlisted:shift_with_barrier"),
    (test_waiting.test_overlapped_step, 2, "waiting.unlisted:step_multi_dot"),
    (test_waiting.test_safe_ring_shift, 3, "waiting:shift_parity_blocking"),
    (test_waiting.test_overlapped_step, 2, "waiting:step_isend_irecv"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.others:shift_monitored_barrier_reverse_waits"),
    (test_waiting.test_overlapped_step, 3, "waiting.others:step_einsum_tagged"),
    (test_waiting.test_overlapped_step, 3, "waiting.unlisted4:step_pg_overlapped"),
]

# [lesson]
# The course's own code communicating for the body: the reference, or lesson 10's engine.
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.borrowed:shift_calls_the_lesson", BORROWED),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_waiting.test_overlapped_step, 2, "waiting.red:step_float32_product", "is wrong at"),
]

# [red teams]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, "waiting.red:step_type_as_first"),
    (test_waiting.test_overlapped_step, 3, "waiting.red:step_shape_check_first"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red2:shift_double_buffered", KEPT),
]

# [red teams]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, "waiting.red2:step_linear"),
    (test_waiting.test_overlapped_step, 3, "waiting.red2:step_transposed_product"),
    (test_waiting.test_overlapped_step, 2, "waiting.red2:step_row_chunks"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red2:shift_empty_plus_copy"),
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
    (test_waiting.test_safe_ring_shift, 3, "waiting.red5:shift_delta_encoded", CONTENTS),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red5:shift_scratch_in_input_data", INTO),
    (test_waiting.test_overlapped_step, 3, "waiting.red5:step_product_before_posting",
     "before posting"),
]

# [red teams]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, "waiting.red5:step_column_halves"),
    (test_waiting.test_overlapped_step, 2, "waiting.red5:step_split_k"),
    (test_waiting.test_overlapped_step, 2, "waiting.red5:step_broadcast_multiply_sum"),
    (test_waiting.test_safe_ring_shift, 5, "waiting.red5:shift_blocking_chain"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red6:safe_ring_shift_reuses_last_input",
     ("changed `tensor`", "changed what an earlier call returned")),
    (test_waiting.test_overlapped_step, 2, "waiting.red6:overlapped_step_storage_escape",
     "the weight left torch (untyped_storage)"),
]

# [red teams]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, "waiting.red6:overlapped_step_matmul_out"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_waiting.test_overlapped_step, 2, "waiting.red9_early:step_hidden_product_first", PRIVATE),
    (test_waiting.test_overlapped_step, 3, "waiting.red9_early:step_hidden_product_after_wait",
     PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_tampers_with_grader", PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_flips_send_in_flight",
     "its send buffer was written (neg_) before the send was waited"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_reads_before_wait",
     "its receive buffer was read (numpy) before the receive was waited"),
    (test_waiting.test_safe_ring_shift, 4, "waiting.red9_early:shift_empty_shortcut",
     "expected shape (0, 2)"),
]

# [ours]
RIGHT += [
    (test_waiting.test_overlapped_step, 3, "waiting.red9_early:step_tensordot"),
    (test_waiting.test_overlapped_step, 2, "waiting.red9_early:step_product_in_thread"),
]

# [ours]
# Thirteenth round, a red team (tests/graders/bodies/<lesson>/red10.py): a receive buffer read
# through DLPack or its address, global settings (autocast, Python's and numpy's generators,
# a process-wide module hook), an alias made with _make_subclass, a bool tensor turned int64
# by a whole turn; and a halo exchanged once, three deep (scripts/halo_deep_once.py).
WRONG += [
    (test_waiting.test_safe_ring_shift, 2, "waiting.red10:shift_read_via_dlpack",
     "its receive buffer was read (__dlpack__)"),
    (test_waiting.test_safe_ring_shift, 2, "waiting.red10:shift_read_via_ctypes",
     "its receive buffer was read (data_ptr)"),
    (test_waiting.test_safe_ring_shift, 2, "waiting.red10:shift_autocast_left_on",
     "(torch.autocast)"),
    (test_waiting.test_overlapped_step, 2, "waiting.red10:step_compute_first_make_subclass",
     PRIVATE),
]

# [ours]
RIGHT += [
    (test_waiting.test_safe_ring_shift, 4, "waiting.red10:shift_loose_recv_first"),
    (test_waiting.test_overlapped_step, 3, "waiting.red10:step_einsum"),
]

# [ours]
# Fourteenth round, a red team (tests/graders/bodies/<lesson>/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red11_a:shift_halves_as_float32",
     "never widened or narrowed"),
    (test_waiting.test_overlapped_step, 2, "waiting.red11_a:step_copy_weight_in_flight",
     "before computing block @ weight"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red12_a:shift_empty_shortcut_default_dtype",
     "returned shape"),
]

# [ours]
# the weight's values taken out of the grader's sight, the product computed after the wait
WRONG += [
    (test_waiting.test_overlapped_step, 3, "waiting.red12_a:step_product_after_wait_via_item",
     "the weight left torch (item)"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_pickle", LATE),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_torch_save",
     "called torch.save()"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_data", LATE),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_deepcopy", "__deepcopy__"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_float",
     "the weight left torch"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_repr", "raised ValueError"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_bytes_of_view",
     "the weight left torch"),
    (test_waiting.test_overlapped_step, 2, "waiting.red13_escape:via_parameter", LATE),
]

# [ours]
RIGHT += [
    (test_waiting.test_overlapped_step, 3, "waiting.red12_a:step_scratch_then_copy"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red12_a:shift_send_in_thread"),
]

# [ours]
# Round 14 (ours, tests/graders/bodies/<lesson>/red14_more.py): the two graders touched in round 13,
# in the kinds left unwritten: another collective, a request left unwaited (or waited by a
# thread after the return), a buffer kept so that the next call overwrites this one's result
WRONG += [
    (test_waiting.test_overlapped_step, 3, "waiting.red14_more:step_all_gather_async",
     "called all_gather"),
    (test_waiting.test_overlapped_step, 3, "waiting.red14_more:step_functional_permute",
     "called all_to_all_single"),
    (test_waiting.test_overlapped_step, 2, "waiting.red14_more:step_send_never_waited", UNWAITED),
    (test_waiting.test_overlapped_step, 3, "waiting.red14_more:step_waited_after_return", UNWAITED),
    (test_waiting.test_overlapped_step, 2, "waiting.red14_more:step_product_in_kept_buffer", KEPT),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red14_styles:shift_recv_first"),
]
