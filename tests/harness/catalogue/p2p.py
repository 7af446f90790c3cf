"""Lesson `p2p`'s learner bodies (tests/graders/bodies/p2p/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_p2p
from tests.harness.catalogue.messages import (ARRIVED, BUILTIN, CONTENTS, FRESH, KEPT, PARTNERS,
                                             ROAD, SIZES)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_local", SIZES),
    (test_p2p.test_pass_token, 2, "p2p:pass_token_broadcast", BUILTIN),
    (test_p2p.test_pass_token, 1, "p2p:pass_token_same_at_one_rank", FRESH),
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_reply_local",
     "must be what arrived"),
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_clock_after_send",
     "time each round on its own"),
    (test_p2p.test_pass_token, 3, "p2p:pass_token_rank0_local",
     "must return the token that came back"),
]

# [lesson]
# The kinds no grader names (tests/graders/bodies/<lesson>/unlisted.py): caught from the record and
# the reference, in general.
WRONG += [
    (test_p2p.test_pass_token, 3, "p2p.unlisted:pass_token_star_any_source",
     ("from any source", PARTNERS)),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_p2p.test_pass_token, 6, "p2p.unlisted2:pass_token_builtin_at_6", BUILTIN),
    (test_p2p.test_ping_pong, 2, "p2p.unlisted2:ping_pong_clock_after_send",
     "time each round on its own"),
    (test_p2p.test_ping_pong, 3, "p2p.unlisted3:ping_pong_subgroup_broadcast", BUILTIN),
    (test_p2p.test_pass_token, 3, "p2p.unlisted3:pass_token_send_object", "never widened"),
    (test_p2p.test_pass_token, 3, "p2p.unlisted3:pass_token_isend_unwaited", "never waited for"),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p:ping_pong_nonblocking"),
    (test_p2p.test_pass_token, 3, "p2p:pass_token_batched"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p.others:ping_pong_zeros_like_isend"),
    (test_p2p.test_ping_pong, 2, "p2p.others:ping_pong_zeros_like_isend"),
    (test_p2p.test_pass_token, 5, "p2p.others:pass_token_tagged_world_group"),
]

# [lesson]
# The method on dummy data, the answer by another road (tests/graders/bodies/<lesson>/roads.py).
WRONG += [
    (test_p2p.test_pass_token, 3, "p2p.roads:pass_token_dummy_then_socket", ROAD),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_p2p.test_ping_pong, 3, "p2p.red:pp_fixed_three",
     ("the method sends 1", "sends nothing in this case")),
    (test_p2p.test_ping_pong, 2, "p2p.red:pp_avg_seconds",
     ("time each round on its own", "raised ZeroDivisionError")),
    (test_p2p.test_ping_pong, 2, "p2p.red:pp_fake_seconds", "time each round on its own"),
    (test_p2p.test_ping_pong, 3, "p2p.red:pp_rank1_from_first",
     (*ARRIVED, "holding other values than the method sends")),
    (test_p2p.test_ping_pong, 5, "p2p.red:pp_local_beyond_two", ARRIVED),
    (test_p2p.test_ping_pong, 2, "p2p.red:pp_int_dtypes_local", ARRIVED),
    (test_p2p.test_pass_token, 4, "p2p.red:pt_local_beyond_three", ARRIVED),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_p2p.test_pass_token, 3, "p2p.red2:pass_token_double_buffered", KEPT),
]

# [red teams]
RIGHT += [
    (test_p2p.test_pass_token, 5, "p2p.red2:pass_token_isend_chain"),
]

# [red teams]
# Sixth round, a third red team (tests/graders/bodies/<lesson>_red3.py): rank 1's replies made
# locally, a star one peer at a time, a root that is right only at the ends, bucket plans
# that close at DDP's first-bucket size or only above the cap, replicas that differ in their
# last bits; tags per round or per direction, sends waited at once in the pipeline.
WRONG += [
    (test_p2p.test_ping_pong, 2, "p2p.red3:ping_pong_rank1_running_reply", "whatever arrived"),
    (test_p2p.test_ping_pong, 3, "p2p.red3:ping_pong_rank1_replies_start",
     ("whatever arrived", "holding other values than the method sends")),
]

# [red teams]
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p.red3:ping_pong_round_tags"),
    (test_p2p.test_ping_pong, 3, "p2p.red3:ping_pong_direction_tags"),
    (test_p2p.test_pass_token, 5, "p2p.red3:pass_token_hop_tags"),
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
    (test_p2p.test_pass_token, 4, "p2p.red5:pass_token_last_adds_all", CONTENTS),
]

# [red teams]
RIGHT += [
    (test_p2p.test_ping_pong, 2, "p2p.red5:ping_pong_any_source"),
    (test_p2p.test_pass_token, 3, "p2p.red5:pass_token_any_source"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    # (it was in RIGHT: with rounds=0 it leaves a receive posted, which takes a later message)
    (test_p2p.test_ping_pong, 2, "p2p.red3:ping_pong_prepost", "never waited for"),
    (test_p2p.test_ping_pong, 2, "p2p.red6:ping_pong_do_while", "sends nothing in this case"),
    (test_p2p.test_ping_pong, 2, "p2p.red6:ping_pong_int_via_float", CONTENTS),
]

# [red teams]
RIGHT += [
    (test_p2p.test_ping_pong, 2, "p2p.red6:ping_pong_final_barrier"),
    (test_p2p.test_pass_token, 3, "p2p.red6:pass_token_prepost"),
    (test_p2p.test_pass_token, 3, "p2p.red6:pass_token_barrier_first"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_p2p.test_ping_pong, 2, "p2p.red9_early:ping_pong_pool_of_four", "the same memory twice"),
]

# [ours]
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p.red9_early:ping_pong_rank1_preposts"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_p2p.test_pass_token, 3, "p2p.red12_a:pass_token_adds_in_float32_except_int64",
     ("other values than the method sends", "is wrong at flat index")),
]

# [ours]
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p.red12_a:ping_pong_one_buffer_cloned"),
    (test_p2p.test_ping_pong, 2, "p2p.red12_a:ping_pong_replies_in_one_buffer"),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_p2p.test_ping_pong, 3, "p2p.red14_styles:ping_pong_isend_irecv"),
    (test_p2p.test_pass_token, 4, "p2p.red14_styles:pass_token_tagged"),
]

# [ours]
# ping_pong's clock, after its check changed (each round holds the partner's pause and the
# span the record saw): five more wrong clocks, each with the right replies.
WRONG += [(test_p2p.test_ping_pong, 2, "p2p.red16_clocks:" + name, "time each round on its own")
          for name in ("pp_clock_around_recv_only", "pp_one_way_latency", "pp_milliseconds",
                       "pp_cumulative", "pp_previous_round")]
