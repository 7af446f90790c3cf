"""Lesson `batching`'s learner bodies (tests/graders/bodies/batching/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_batching
from tests.harness.catalogue.messages import BUILTIN, CONTENTS, FRESH, KEPT, PARTNERS, STEPS

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_batching.test_exchange_with_neighbours, 3, "batching:neighbours_loose",
     "in 0 batch_isend_irecv call(s) and point-to-point ops outside a batch"),
    (test_batching.test_exchange_with_neighbours, 3, "batching:neighbours_two_batches",
     "in 2 batch_isend_irecv call(s); expected its 2 sends and 2 receives in ONE"),
    (test_batching.test_exchange_with_neighbours, 1, "batching:neighbours_same_at_one_rank",
     FRESH),
    (test_batching.test_ring_shift, 4, "batching:shift_relay", "not relayed through the ranks"),
    (test_batching.test_ring_shift, 2, "batching:shift_same_at_k0", FRESH),
    (test_batching.test_all_pairs_exchange, 3, "batching:all_pairs_data_in_size_batch",
     ("in the batch of lengths", STEPS)),
    (test_batching.test_all_pairs_exchange, 1, "batching:all_pairs_same_at_one_rank", FRESH),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_batching.test_exchange_with_neighbours, 3, "batching.unlisted3:neighbours_float_as_int",
     "never widened"),
    (test_batching.test_ring_shift, 4, "batching.unlisted3:ring_shift_any_source",
     "from any source"),
    (test_batching.test_all_pairs_exchange, 3, "batching.unlisted3:all_pairs_sizes_by_object",
     BUILTIN),
    (test_batching.test_exchange_with_neighbours, 3, "batching.unlisted5:neighbours_right_twice",
     "the method sends 1"),
    (test_batching.test_all_pairs_exchange, 3, "batching.unlisted5:all_pairs_lengths_as_float",
     "1 x int64"),
    (test_batching.test_exchange_with_neighbours, 2,
     "batching.unlisted7:neighbours_one_tensor_twice",
     "returned the same memory twice"),
    (test_batching.test_exchange_with_neighbours, 1,
     "batching.unlisted7:neighbours_one_copy_twice_at_one_rank",
     "returned the same memory twice"),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_batching.test_exchange_with_neighbours, 2, "batching:neighbours_receives_first"),
    (test_batching.test_ring_shift, 3, "batching:shift_unbatched"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_batching.test_exchange_with_neighbours, 3,
     "batching.others:neighbours_staged_group_peer"),
    (test_batching.test_ring_shift, 4, "batching.others:ring_shift_normalised_isend"),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_batching.test_all_pairs_exchange, 3, "batching.red:pairs_no_contiguous",
     "has to be contiguous"),
    # a chunk that is a strided view (the contract: contiguous or not) is sent as is
    (test_batching.test_all_pairs_exchange, 3, "batching:all_pairs_by_peer",
     "has to be contiguous"),
    (test_batching.test_all_pairs_exchange, 3, "batching.others:all_pairs_receives_first_monitored",
     "has to be contiguous"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_batching.test_exchange_with_neighbours, 3, "batching.red2:neighbours_double_buffered",
     KEPT),
    (test_batching.test_all_pairs_exchange, 3, "batching.red2:all_pairs_waits_size_receives_only",
     STEPS),
]

# [red teams]
RIGHT += [
    (test_batching.test_ring_shift, 3, "batching.red2:ring_shift_isend_first_blocking_recv"),
    (test_batching.test_all_pairs_exchange, 4, "batching.red2:all_pairs_skips_empty"),
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
    (test_batching.test_all_pairs_exchange, 3, "batching.red5:all_pairs_lengths_in_bytes",
     CONTENTS),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_batching.test_exchange_with_neighbours, 3,
     "batching.red9_early:neighbours_flips_send_in_flight",
     "its send buffer was written"),
    (test_batching.test_ring_shift, 8, "batching.red9_early:ring_shift_relays_long_shifts",
     PARTNERS),
]

# [ours]
RIGHT += [
    (test_batching.test_all_pairs_exchange, 3, "batching.red9_early:all_pairs_zero_dim_lengths"),
    (test_batching.test_all_pairs_exchange, 4,
     "batching.red9_early:all_pairs_lengths_in_one_tensor"),
]

# [ours]
# Thirteenth round, a red team (tests/graders/bodies/<lesson>/red10.py): a receive buffer read
# through DLPack or its address, global settings (autocast, Python's and numpy's generators,
# a process-wide module hook), an alias made with _make_subclass, a bool tensor turned int64
# by a whole turn; and a halo exchanged once, three deep (scripts/halo_deep_once.py).
WRONG += [
    (test_batching.test_ring_shift, 2, "batching.red10:ring_shift_copy_plus_zero",
     "expected shape (6,) bool"),
]

# [ours]
RIGHT += [
    (test_batching.test_ring_shift, 5, "batching.red10:ring_shift_recv_first"),
]

# [ours]
# Fourteenth round, a red team (tests/graders/bodies/<lesson>/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
WRONG += [
    (test_batching.test_exchange_with_neighbours, 3, "batching.red11_a:neighbours_widen_small_ints",
     "never widened or narrowed"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_batching.test_ring_shift, 3, "batching.red12_a:ring_shift_clamps_infinities",
     "is wrong at flat index"),
]

# [ours]
RIGHT += [
    (test_batching.test_all_pairs_exchange, 4, "batching.red12_a:all_pairs_rotated"),
]

# [ours]
# Round 15 (ours, tests/graders/bodies/<lesson>/red15_probe.py): the exercises the catalogue held least
# of, in kinds no list named: another algorithm (a chain, a two-way ring, a relay for small
# k), the caller's memory swapped out, sizes in a float of int64's width, one side's
# requests unwaited, the own slot the input itself, one batch per peer
WRONG += [
    (test_batching.test_all_pairs_exchange, 3, "batching.red15_probe:all_pairs_sizes_float64",
     "never widened"),
    (test_batching.test_exchange_with_neighbours, 2, "batching.red15_probe:neighbours_once_for_two",
     "the method sends 2"),
    (test_batching.test_ring_shift, 5, "batching.red15_probe:shift_relayed_for_small_k",
     "not relayed"),
]
