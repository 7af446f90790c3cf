"""Lesson `snippets`'s learner bodies (tests/graders/bodies/snippets/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_snippets
from tests.harness.catalogue.messages import (EXACT_MEAN, HUNG, INTO, KEPT, PRIVATE, STALE, SUMS,
                                             UNWAITED)

WRONG: list = []
RIGHT: list = []

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_snippets.test_fixed_average_gradients, 2, "snippets.unlisted3:fixed_average_in_float32",
     "never widened"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.unlisted5:fixed_average_barrier_not_wait",
     "never waited for"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.others2:fixed_flat_receives_first"),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red:avg_float32_arith",
     "is wrong at"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    # (the sums probe calls it a third time: its two buffers then deadlock the ranks)
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red2:fixed_average_double_buffered",
     (KEPT, HUNG)),
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
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red5:fixed_average_params_as_scratch",
     INTO),
]

# [red teams]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red5:fixed_average_predivided_in_place"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red6:fixed_average_skips_add_when_mine_repeats", STALE),
]

# [red teams]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 4, "snippets.red6:fixed_average_reversed_orders"),
]

# [ours]
# Eleventh round, ours (tests/graders/bodies/<lesson>/red8_gradients.py): gradient averages whose
# ring calls are for show (on zeros, the mean exchanged all to all), a relay where every rank
# should send to every other, a doubled wire; and peers visited in another order (right).
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red8_gradients:fixed_average_relayed",
     "never sent anything to rank"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red8_gradients:fixed_average_doubled_wire",
     SUMS),
]

# [ours]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 4,
     "snippets.red8_gradients:fixed_average_peers_descending"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red9_early:average_hidden_all_reduce",
     PRIVATE),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red9_early:average_via_shared_file",
     PRIVATE),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red9_early:average_reads_before_wait",
     "its receive buffer was read (numpy)"),
]

# [ours]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red9_early:average_into_flat_views"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red9_early:average_waits_receives_then_sends"),
]

# [ours]
# Fourteenth round, a red team (tests/graders/bodies/<lesson>/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red11_a:fixed_average_half_grads_in_float32",
     "never widened or narrowed"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red12_a:fixed_average_keeps_zero_grads",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2,
     "snippets.red12_a:fixed_average_bf16_through_half",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red12_a:fixed_average_clamped",
     "is wrong at flat index"),
]

# [ours]
# Round 13 (ours): averages whose precision depends on the values; the exactly summed
# gradients make every right order exact, so a narrower type anywhere is off by ulps
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red12_a:fixed_average_f16_summed_in_bf16",
     EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red13_precision:divided_in_bf16",
     EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 4,
     "snippets.red13_precision:others_summed_in_bf16",
     EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red13_precision:f64_through_f32",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red13_precision:f32_sent_as_f16",
     "never widened or narrowed"),
]

# [ours]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red13_precision:accumulate_in_f32"),
    (test_snippets.test_fixed_average_gradients, 5, "snippets.red13_precision:divide_then_add"),
]

# [ours]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red12_a:fixed_average_float64_accumulator"),
]

# [ours]
# Round 14 (ours, tests/graders/bodies/<lesson>/red14_more.py): the two graders touched in round 13,
# in the kinds left unwritten: another collective, a request left unwaited (or waited by a
# thread after the return), a buffer kept so that the next call overwrites this one's result
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red14_more:avg_all_to_all",
     "called all_to_all"),
    (test_snippets.test_fixed_average_gradients, 2,
     "snippets.red14_more:avg_nn_functional_all_reduce",
     "called all_reduce"),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red14_more:avg_object_lists",
     "never widened or narrowed"),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red14_more:avg_sends_never_waited",
     UNWAITED),
    (test_snippets.test_fixed_average_gradients, 2,
     "snippets.red14_more:avg_into_kept_receive_buffer",
     KEPT),
]

# [ours]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red14_more:avg_kept_receive_buffers"),
]
