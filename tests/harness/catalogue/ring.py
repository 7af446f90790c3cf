"""Lesson `ring`'s learner bodies (tests/graders/bodies/ring/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_ring
from tests.harness.catalogue.messages import (BORROWED, BUILTIN, HUNG, IN_FLIGHT, MEMORY,
                                             PARTNERS, PIPELINE, ROAD, SHUFFLED, SIZES, STALE,
                                             STEPS, SUMS, SUMS_ANY)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_ring.test_ring_reduce_scatter, 2, "ring:rs_all_reduce", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, "ring:rs_whole_tensors",
     ("never whole tensors", PARTNERS, *SIZES)),
    (test_ring.test_ring_reduce_scatter, 2, "ring:rs_float32", "own dtype (bfloat16)"),
    (test_ring.test_ring_all_reduce, 3, "ring:ring_builtin", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, "ring:ring_half_builtin", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, "ring:ring_pass_along",
     ("never whole tensors", PARTNERS, *SIZES, STEPS)),
    (test_ring.test_ring_all_reduce, 3, "ring:ring_pass_along",
     ("never whole tensors", PARTNERS, *SIZES, *SUMS_ANY)),
    (test_ring.test_ring_all_reduce, 2, "ring:ring_bf16_in_float32", "own dtype (bfloat16)"),
    (test_ring.test_ring_all_reduce, 2, "ring:ring_send_first", HUNG),
    (test_ring.test_pipelined_ring_all_reduce, 2, "ring:pipelined_builtin",
     BUILTIN),
    (test_ring.test_pipelined_ring_all_reduce, 2, "ring:pipelined_unsegmented",
     SIZES + (PIPELINE,)),
    (test_ring.test_pipelined_ring_all_reduce, 2, "ring:pipelined_elements",
     SIZES),
]

# [lesson]
# The kinds no grader names (tests/graders/bodies/<lesson>/unlisted.py): caught from the record and
# the reference, in general.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted:ring_pg_allreduce", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted:ring_functional", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted:ring_coalesced", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, "ring.unlisted:rs_straight_to_owner", PARTNERS),
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted:ring_then_star", PARTNERS),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted:ring_float64_messages", "never widened"),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted:ring_builtin_when_small", BUILTIN),
    (test_ring.test_ring_all_reduce, 6, "ring.unlisted:ring_builtin_for_large_worlds", BUILTIN),
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted:ring_sends_waited_at_the_end",
     ("written before the send was waited", STEPS)),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted2:ring_thread_pg_allreduce", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, "ring.unlisted2:rs_thread_all_reduce", BUILTIN),
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted2:ring_via_store", ROAD),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted2:ring_builtin_when_large", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted2:ring_falls_back_to_builtin", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, "ring.unlisted3:rs_reversed_ring", PARTNERS),
    (test_ring.test_ring_all_reduce, 4, "ring.unlisted3:ring_doubling_instead", PARTNERS),
    (test_ring.test_ring_all_reduce, 2, "ring.unlisted3:ring_doubling_instead", (*SIZES, STEPS)),
    (test_ring.test_ring_all_reduce, 5, "ring.unlisted3:ring_blocking_from_5", HUNG),
    (test_ring.test_pipelined_ring_all_reduce, 3,
     "ring.unlisted5:pipelined_plain_ring_for_integers",
     SIZES + (PIPELINE,)),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_ring.test_ring_all_reduce, 3, "ring.unlisted:ring_with_barrier"),
    (test_ring.test_ring_reduce_scatter, 3, "ring:rs_isend_irecv"),
    (test_ring.test_ring_all_reduce, 3, "ring:ring_parity_blocking"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_ring.test_ring_reduce_scatter, 3, "ring.others:rs_on_data_tagged"),
    (test_ring.test_ring_all_reduce, 3, "ring.others:ring_two_phases_own_buffers"),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.others:pipelined_with_barriers"),
    (test_ring.test_ring_all_reduce, 3, "ring.styles:ring_parity_blocking"),
    (test_ring.test_ring_all_reduce, 5, "ring.styles:ring_isend_irecv"),
]

# [lesson]
# The method on dummy data, the answer by another road (tests/graders/bodies/<lesson>/roads.py).
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.roads:ring_dummy_then_store", ROAD),
    (test_ring.test_ring_reduce_scatter, 4, "ring.roads:rs_dummy_then_prefix_store", ROAD),
    # a thread of its own is no road around the record: it sees every thread's calls
    (test_ring.test_ring_all_reduce, 3, "ring.roads:ring_dummy_then_thread", BUILTIN),
    (test_ring.test_ring_all_reduce, 4, "ring.roads:ring_dummy_then_thread_pg", BUILTIN),
    # the answer rebuilt from the inputs' seeds: the graders' seeds are not the lessons'
    (test_ring.test_ring_all_reduce, 3, "ring.roads:ring_dummy_then_rebuilt",
     ("is wrong at", "the same values when")),
    (test_ring.test_ring_all_reduce, 2, "ring.roads:ring_dummy_then_rebuilt_from_graders",
     ("asked the graders for their inputs", "never the machinery that grades it")),
]

# [lesson]
# The ring the other way round: right values, not the route the contract fixes.
WRONG += [
    (test_ring.test_ring_all_reduce, 4, "ring.styles:ring_counter_clockwise",
     "in the ring, rank"),
]

# [lesson]
# The course's own code communicating for the body: the reference, or lesson 10's engine.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.borrowed:ring_calls_the_reference", BORROWED),
    (test_ring.test_ring_all_reduce, 4, "ring.borrowed:ring_calls_the_engine", BORROWED),
]

# [red teams]
# Third round (tests/graders/bodies/<lesson>/memory.py): the caller's memory, precision, a receive
# buffer used before its wait, extra or relayed messages, the method for small tensors only.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.memory:ring_into_new_memory", MEMORY),
    (test_ring.test_ring_all_reduce, 3, "ring.memory:ring_adds_in_float32", "is wrong at"),
    (test_ring.test_ring_all_reduce, 3, "ring.memory:ring_adds_before_waiting",
     ("receive buffer was used", IN_FLIGHT)),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.memory:pipelined_one_segment_at_a_time",
     ("never had two receives in flight", PIPELINE)),
    # one step at a time, whole: with one segment per chunk, lesson 05's plain ring
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring:pipelined_step_batches",
     ("never had two receives in flight", PIPELINE)),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red2:pipelined_step_synchronous",
     PIPELINE),
]

# [red teams]
RIGHT += [
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red2:pipelined_window"),
    (test_ring.test_pipelined_ring_all_reduce, 4, "ring.red2:pipelined_balanced_segments"),
    (test_ring.test_ring_all_reduce, 5, "ring.red2:ring_padded"),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red2:rs_tagged_group_none"),
]

# [red teams]
RIGHT += [
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red3:pipelined_send_waited_at_once"),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red3:pipelined_blocking_forward"),
    (test_ring.test_ring_all_reduce, 5, "ring.red3:ring_group_world"),
    (test_ring.test_ring_reduce_scatter, 5, "ring.red3:rs_parity_blocking"),
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
    (test_ring.test_ring_all_reduce, 3, "ring.red5:ring_lazy_send_waits_handshake", STEPS),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red5:pipelined_step_synchronous_handshake",
     PIPELINE),
    # odd ranks return their memo while even ranks run the ring: stale, or gloo aborts, or
    # it hangs
    (test_ring.test_ring_all_reduce, 3, "ring.red5:ring_memo_same_input",
     ("the same values when", "killed by signal", "larger than its buffer", HUNG,
      "is wrong at flat index")),
]

# [red teams]
RIGHT += [
    (test_ring.test_ring_all_reduce, 3, "ring.red5:ring_via_contiguous_copy"),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red5:rs_tensor_split"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red6:ring_memo_still_communicates", STALE),
]

# [red teams]
RIGHT += [
    (test_ring.test_ring_all_reduce, 5, "ring.red6:ring_skips_empty_chunks"),
]

# [ours]
# Tenth round, ours (tests/graders/bodies/<lesson>/red7_sums.py): what travels in a reduction (the
# partial sums, compared on a probe where every rank's tensor holds 2**rank, which makes them
# exact in any order and names the ranks each adds up; a gradient average may divide first)
# and in a broadcast (each message holds
# the data every rank ends with): a negated, doubled or XOR-encoded wire fails; another cut
# of the tensor, another chunk ownership, or adding in float64 passes.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red6:ring_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 3, "ring.red6:ring_xor_delta_wire", SUMS),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red7_sums:rs_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 4, "ring.red7_sums:ring_doubled_wire", SUMS),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red7_sums:pipelined_doubled_wire", SUMS),
]

# [ours]
RIGHT += [
    (test_ring.test_ring_all_reduce, 4, "ring.red7_sums:ring_other_owner"),
    (test_ring.test_ring_all_reduce, 5, "ring.red7_sums:ring_accumulates_in_float64"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_ring.test_ring_all_reduce, 2, "ring.red9_late:ring_bare_assert",
     "raised AssertionError: (no message)"),
    # a cache for large tensors only: the call-again probe runs on the largest cases too
    (test_ring.test_ring_all_reduce, 3, "ring.red9_late:ring_memo_large", "the same values when"),
    # two receives in flight once, then one segment at a time
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red9_late:pipelined_prefetch_once",
     "with no receive posted for the next one"),
]

# [ours]
RIGHT += [
    (test_ring.test_ring_all_reduce, 7, "ring.red9_late:ring_strided_chunks"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_ring.test_ring_all_reduce, 5, "ring.red12_b:ar_delta_encoded", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, "ring.red12_b:ar_flipped_wire", SHUFFLED),
    (test_ring.test_ring_reduce_scatter, 4, "ring.red12_b:rs_delta_encoded", SHUFFLED),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red12_b:pipelined_flipped_segments",
     SHUFFLED),
]

# [ours]
# partial sums on the wire in another layout: a message keeps each gradient's order
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_rotated_wire", SHUFFLED),
    (test_ring.test_ring_all_reduce, 4, "ring.red13_layout:ar_interleaved_wire", SHUFFLED),
    # where every position does not fit the dtype, positions grow block by block
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_delta_encoded_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_flipped_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_flipped_bf16", SHUFFLED),
]

# [ours]
RIGHT += [
    (test_ring.test_ring_all_reduce, 4, "ring.red12_b:ar_shifted_owner"),
    (test_ring.test_ring_all_reduce, 3, "ring.red12_b:ar_strided_chunks"),
    (test_ring.test_ring_all_reduce, 3, "ring.red12_b:ar_send_thread"),
    (test_ring.test_pipelined_ring_all_reduce, 5, "ring.red12_b:pipelined_balanced_segments"),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_ring.test_ring_all_reduce, 7, "ring.red14_styles:ar_isend_irecv"),
    (test_ring.test_ring_reduce_scatter, 4, "ring.red14_styles:rs_narrow"),
]

# [ours]
WRONG += [
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red15:pipelined_segment_as_float32",
     "no message holds more than"),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red15:pipelined_chunk_at_a_time",
     "the pipeline forwards each segment as soon as it is reduced"),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red15:rs_returns_copy", "must return the view"),
]

# [ours]
RIGHT += [
    (test_ring.test_ring_reduce_scatter, 4, "ring.red15:rs_receive_into_chunk"),
]

# [ours]
# right on a launch's first calls, wrong after a few: every call is graded, not the first
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red15_late:ar_builtin_after_five",
     "called all_reduce"),
]

# [causes]
WRONG += [(test_ring.test_ring_all_reduce, ws, "ring.causes:" + body, "is wrong at")
          for body in ("ring_floor_chunks", "ring_gather_floor_bounds") for ws in (2, 3)]

# [causes]
# A tensor of fewer elements than ranks (shape (), (0,)) is never probed with another shape:
# a ring that goes wrong is told on the reader's own input, at the first case that shows it
# (the route, or the values), not by a probe of a call the reader never made.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.causes:ring_chunks_counted_up", "is wrong at"),
    (test_ring.test_ring_all_reduce, 3, "ring.styles:ring_counter_clockwise", "in the ring, rank"),
]
