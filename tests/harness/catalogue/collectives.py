"""Lesson `collectives`'s learner bodies (tests/graders/bodies/collectives/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_collectives
from tests.harness.catalogue.messages import (BORROWED, BUILTIN, CONTENTS, FRESH, KEPT, MEMORY,
                                             ONE_BATCH, PARTNERS, ROAD, ROOT, STAR, STEPS,
                                             UNWAITED)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_collectives.test_p2p_broadcast, 2, "collectives:broadcast_builtin",
     BUILTIN),
    (test_collectives.test_p2p_gather, 2, "collectives:gather_builtin", BUILTIN),
    (test_collectives.test_p2p_gather, 2, "collectives:gather_aliases_input", FRESH),
    (test_collectives.test_p2p_all_gather, 2, "collectives:all_gather_builtin",
     BUILTIN),
    (test_collectives.test_p2p_all_gather, 3, "collectives:all_gather_star",
     ("not a star", PARTNERS)),
    (test_collectives.test_p2p_all_gather, 1, "collectives:all_gather_aliases_at_one_rank",
     FRESH),
    (test_collectives.test_p2p_all_to_all, 2, "collectives:all_to_all_builtin",
     BUILTIN),
    (test_collectives.test_p2p_all_to_all, 2, "collectives:all_to_all_replaces_entries",
     ("replaced outputs[0] with another tensor; fill the caller's tensors in place",
      "replaced the memory of its argument `outputs`")),
    (test_collectives.test_p2p_all_to_all, 2, "collectives:all_to_all_aliases_input",
     ("replaced outputs[0] with another tensor", "replaced the memory of its argument")),
]

# [lesson]
# The kinds no grader names (tests/graders/bodies/<lesson>/unlisted.py): caught from the record and
# the reference, in general.
WRONG += [
    (test_collectives.test_p2p_all_gather, 2, "collectives.unlisted:all_gather_object", BUILTIN),
    (test_collectives.test_p2p_all_gather, 3, "collectives.unlisted:all_gather_growing",
     "the method sends"),
    (test_collectives.test_p2p_all_gather, 2, "collectives.unlisted:all_gather_cached_list",
     "changed what an earlier call returned"),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_collectives.test_p2p_broadcast, 3, "collectives.unlisted2:broadcast_thread", BUILTIN),
    (test_collectives.test_p2p_broadcast, 3, "collectives.unlisted2:broadcast_via_store", ROAD),
    (test_collectives.test_p2p_all_gather, 5, "collectives.unlisted2:all_gather_builtin_beyond_4",
     BUILTIN),
    (test_collectives.test_p2p_broadcast, 7, "collectives.unlisted2:broadcast_builtin_beyond_4",
     BUILTIN),
    (test_collectives.test_p2p_all_gather, 2,
     "collectives.unlisted2:all_gather_views_of_kept_buffer",
     "changed what an earlier call returned"),
    (test_collectives.test_p2p_gather, 3, "collectives.unlisted3:gather_by_object", BUILTIN),
    (test_collectives.test_p2p_all_gather, 3, "collectives.unlisted3:all_gather_reversed_ring",
     PARTNERS),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.unlisted3:all_to_all_per_peer_batches",
     "in 2 batch_isend_irecv call(s)"),
    (test_collectives.test_p2p_broadcast, 3, "collectives.unlisted3:broadcast_pg_methods",
     "outside batch_isend_irecv"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.unlisted3:all_to_all_pg_methods",
     "outside batch_isend_irecv"),
    (test_collectives.test_p2p_gather, 2, "collectives.unlisted3:gather_builtin_when_large",
     BUILTIN),
    (test_collectives.test_p2p_gather, 3, "collectives.unlisted4:gather_flood", ROOT),
    (test_collectives.test_p2p_broadcast, 3, "collectives.unlisted4:broadcast_echo", ROOT),
    (test_collectives.test_p2p_all_to_all, 5, "collectives.unlisted7:all_to_all_builtin_beyond_4",
     BUILTIN),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_collectives.test_p2p_all_gather, 3, "collectives:all_gather_ring_receive_first"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives:all_to_all_receives_first"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_collectives.test_p2p_gather, 3, "collectives.others:gather_receives_in_reverse"),
    (test_collectives.test_p2p_all_gather, 3, "collectives.others:all_gather_with_barrier"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.others:all_to_all_descending"),
    (test_collectives.test_p2p_all_gather, 3, "collectives.others2:all_gather_views_of_one_buffer"),
]

# [lesson]
# The method on dummy data, the answer by another road (tests/graders/bodies/<lesson>/roads.py).
WRONG += [
    (test_collectives.test_p2p_all_gather, 3, "collectives.roads:all_gather_dummy_then_files",
     ROAD),
    (test_collectives.test_p2p_broadcast, 3, "collectives.roads:broadcast_dummy_then_shared_memory",
     ROAD),
]

# [lesson]
# The course's own code communicating for the body: the reference, or lesson 10's engine.
WRONG += [
    (test_collectives.test_p2p_all_gather, 3, "collectives.borrowed:all_gather_calls_the_reference",
     BORROWED),
    # lesson 07's broadcast and gather are the star; a tree or a chain is another method
    (test_collectives.test_p2p_broadcast, 4, "collectives:broadcast_tree", STAR),
    (test_collectives.test_p2p_gather, 4, "collectives:gather_tree", STAR),
    (test_collectives.test_p2p_broadcast, 4, "collectives.others:broadcast_chain", STAR),
]

# [red teams]
# Third round (tests/graders/bodies/<lesson>/memory.py): the caller's memory, precision, a receive
# buffer used before its wait, extra or relayed messages, the method for small tensors only.
WRONG += [
    (test_collectives.test_p2p_all_to_all, 3, "collectives.memory:all_to_all_new_outputs", MEMORY),
    (test_collectives.test_p2p_gather, 3, "collectives.memory:gather_negates_for_a_moment",
     "wrote into its argument `tensor` and put its values back"),
    (test_collectives.test_p2p_broadcast, 4, "collectives.memory:broadcast_then_gossip", STAR),
    (test_collectives.test_p2p_broadcast, 4, "collectives.memory:broadcast_relayed_by_one_rank",
     STAR),
    (test_collectives.test_p2p_gather, 3, "collectives.memory:gather_sends_twice", STAR),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_collectives.test_p2p_gather, 3, "collectives.red:gather_returns_tuple",
     "expected a list"),
    (test_collectives.test_p2p_all_gather, 3, "collectives.red:all_gather_returns_tuple",
     "expected a list"),
]

# [red teams]
RIGHT += [
    (test_collectives.test_p2p_broadcast, 4, "collectives.red:broadcast_blocking_pg_group"),
    (test_collectives.test_p2p_gather, 3, "collectives.red:gather_into_one_buffer"),
    (test_collectives.test_p2p_all_gather, 3, "collectives.red:all_gather_forward_scratch"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red:all_to_all_zip_style"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_collectives.test_p2p_all_gather, 3, "collectives.red2:all_gather_double_buffered", KEPT),
    (test_collectives.test_p2p_all_gather, 4, "collectives.red2:all_gather_waits_receive_only",
     STEPS),
]

# [red teams]
RIGHT += [
    (test_collectives.test_p2p_gather, 3, "collectives.red2:gather_stack_unbind"),
]

# [red teams]
# Sixth round, a third red team (tests/graders/bodies/<lesson>_red3.py): rank 1's replies made
# locally, a star one peer at a time, a root that is right only at the ends, bucket plans
# that close at DDP's first-bucket size or only above the cap, replicas that differ in their
# last bits; tags per round or per direction, sends waited at once in the pipeline.
WRONG += [
    (test_collectives.test_p2p_broadcast, 3, "collectives.red3:broadcast_serial",
     "in ONE batch_isend_irecv call"),
    (test_collectives.test_p2p_gather, 3, "collectives.red3:gather_serial",
     "in ONE batch_isend_irecv call"),
    (test_collectives.test_p2p_gather, 3, "collectives.red3:gather_root_at_ends",
     ("is wrong at", "the same values when")),
]

# [red teams]
RIGHT += [
    (test_collectives.test_p2p_all_gather, 3, "collectives.red3:all_gather_step_tags"),
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
    (test_collectives.test_p2p_gather, 3, "collectives.red5:gather_negates_via_data",
     (CONTENTS, "held other values than it was given", "wrote into its argument")),
    (test_collectives.test_p2p_broadcast, 3, "collectives.red5:broadcast_via_torch_store_helper",
     ROAD),
]

# [red teams]
RIGHT += [
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red5:all_to_all_via_temporaries"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_collectives.test_p2p_gather, 3, "collectives.red6:gather_own_slot_times_one",
     ("expected shape (5,) bool", "the same bits required")),
    (test_collectives.test_p2p_broadcast, 3, "collectives.red6:broadcast_reuses_last_tensor",
     "changed what an earlier call returned"),
]

# [red teams]
RIGHT += [
    (test_collectives.test_p2p_gather, 3, "collectives.red6:gather_rows_view_minus_one"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red6:all_to_all_rotated_posts"),
]

# [ours]
RIGHT += [
    (test_collectives.test_p2p_all_gather, 4, "collectives.red9_late:all_gather_sends_input_first"),
    (test_collectives.test_p2p_all_to_all, 8, "collectives.red9_late:all_to_all_skips_empty"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red12_b:a2a_recv_sized_by_own_slot",
     ("killed by signal", "larger than its buffer", "is wrong at flat index",
      "returned shape")),
    (test_collectives.test_p2p_broadcast, 5, "collectives.red12_b:bcast_float64_narrowed",
     "never widened or narrowed"),
    (test_collectives.test_p2p_all_gather, 4, "collectives.red12_b:all_gather_small_ints_widened",
     "never widened or narrowed"),
]

# [ours]
# Round 15 (ours, tests/graders/bodies/<lesson>/red15_probe.py): the exercises the catalogue held least
# of, in kinds no list named: another algorithm (a chain, a two-way ring, a relay for small
# k), the caller's memory swapped out, sizes in a float of int64's width, one side's
# requests unwaited, the own slot the input itself, one batch per peer
WRONG += [
    (test_collectives.test_p2p_broadcast, 4, "collectives.red15_probe:broadcast_batch_per_peer",
     ONE_BATCH),
    (test_collectives.test_p2p_broadcast, 3, "collectives.red15_probe:broadcast_swaps_storage",
     "replaced the memory of its argument"),
    (test_collectives.test_p2p_broadcast, 3, "collectives.red15_probe:broadcast_widened",
     "never widened"),
    (test_collectives.test_p2p_broadcast, 3, "collectives.red15_probe:broadcast_src_never_waits",
     UNWAITED),
    (test_collectives.test_p2p_broadcast, 4, "collectives.red15_probe:broadcast_chain_of_batches",
     "the star"),
    (test_collectives.test_p2p_gather, 3, "collectives.red15_probe:gather_returns_own_elsewhere",
     FRESH),
    (test_collectives.test_p2p_all_gather, 5, "collectives.red15_probe:all_gather_both_ways",
     PARTNERS),
    (test_collectives.test_p2p_all_gather, 3,
     "collectives.red15_probe:all_gather_own_slot_is_input",
     FRESH),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red15_probe:all_to_all_batch_per_peer",
     ONE_BATCH),
]

# [causes]
# What gloo does, in lesson 04's words (section 7: a receive buffer smaller than the message
# kills the receiver; section 6: no pair to the rank's own process), not a signal or an
# enforce line.
WRONG += [
    (test_collectives.test_p2p_all_to_all, 3, "collectives.causes:all_to_all_itself_included",
     "sent to or received from itself"),
]

# [causes]
# Issue 52 item 4: a chunking bug is one problem that names its shared cause (only the last
# numel % p elements wrong) at a line of the body, not the first failing case alone.
WRONG += [
    (test_collectives.test_p2p_all_gather, 3, "collectives.report:all_gather_copies_floor_chunks",
     "the chunks leave the remainder out"),
]
