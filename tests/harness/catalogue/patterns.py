"""Lesson `patterns`'s learner bodies (tests/graders/bodies/patterns/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_patterns
from tests.harness.catalogue.messages import HUNG, KEPT, ONE_BATCH, STALE

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_patterns.test_neighbour_exchange_head_to_head, "float32", "patterns:exchange_blocking",
     HUNG),
    (test_patterns.test_rotate_kv, 2, "patterns:rotate_tags_crossed", "k_next (should be rank"),
    (test_patterns.test_rotate_kv, 2, "patterns:rotate_waits",
     "inside rotate_kv; hand back every request unwaited"),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.unlisted2:rotate_returns_receives_only",
     "returned without the request of a send"),
    (test_patterns.test_rotate_kv, 3, "patterns.unlisted2:rotate_waits_sends_inside",
     "inside rotate_kv; hand back every request unwaited"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.unlisted3:forward_in_float64",
     "never widened"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.unlisted5:backward_receives_into_grad", "changed its argument `input_grad`"),
    (test_patterns.test_rotate_kv, 5, "patterns.unlisted7:rotate_waits_beyond_4",
     "inside rotate_kv; hand back every request unwaited"),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_patterns.test_rotate_kv, 3, "patterns:rotate_receives_first_tagged"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "int64",
     "patterns.others2:forward_tagged_detached"),
    (test_patterns.test_rotate_kv, 3, "patterns.others2:rotate_v_first"),
    (test_patterns.test_rotate_kv, 3, "patterns.others2:rotate_with_barrier"),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red:rotate_v_like_k",
     ("the method receives", "is wrong at", "shape")),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.red_pipeline_peer:", HUNG),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red2:rotate_double_buffered", KEPT),
]

# [red teams]
RIGHT += [
    (test_patterns.test_rotate_kv, 3, "patterns.red2:rotate_explicit_group_tuple"),
]

# [red teams]
# Seventh round, a fourth red team (tests/graders/bodies/<lesson>_red4.py): checked_exchange
# with dtypes of one element size, or its data outside a batch; the neighbour exchange
# ungrouped (NCCL needs the pair grouped: stages 0 and 2 are both even, so a parity order
# by global rank does not help) or on a transposed view.
WRONG += [
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.red4:fwd_ungrouped_contiguous", ONE_BATCH),
    (test_patterns.test_neighbour_exchange_head_to_head, "int64", "patterns.red4:fwd_no_contiguous",
     "has to be contiguous"),
    (test_patterns.test_neighbour_exchange_head_to_head, "int64",
     "patterns:exchange_parity_nonblocking", ("has to be contiguous", ONE_BATCH)),
]

# [red teams]
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "int64", "patterns.red4:fwd_recv_first"),
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 5, "patterns.red4:fwd_recv_first"),
    (test_patterns.test_rotate_kv, 3, "patterns.red4:rotate_send_clones"),
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
    (test_patterns.test_neighbour_exchange_head_to_head, "float64",
     "patterns.red5:fwd_float32_wire",
     "own dtype"),
]

# [red teams]
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16", "patterns.red5:fwd_flat_wire"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 4,
     "patterns.red6:fwd_memo_by_own_output", STALE),
]

# [red teams]
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16",
     "patterns.red6:fwd_receive_first_detached_clone"),
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 3,
     "patterns.red6:fwd_receive_first_detached_clone"),
]

# [ours]
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16",
     "patterns.red10:fwd_exchange_flat"),
    (test_patterns.test_rotate_kv, 4, "patterns.red10:rotate_kv_recv_first"),
    (test_patterns.test_rotate_kv, 3, "patterns.red10:rotate_kv_synchronize"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red12_b:rotate_kv_half_widened",
     "never widened or narrowed"),
]

# [ours]
# kinds no list named: requests waited before they are handed back, the largest subtree
# served last, a stage's send and receive in two batches
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red14_probe:rotate_kv_waited_inside",
     "hand back every request"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.red14_probe:send_forward_two_batches", HUNG),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_patterns.test_rotate_kv, 3, "patterns.red14_styles:rotate_kv_loop"),
]

# [ours]
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red15_more:rotate_kv_one_message",
     "the method sends 2"),
]

# [ours]
RIGHT += [
    (test_patterns.test_rotate_kv, 3, "patterns.red15_more:rotate_kv_sends_copies"),
]

# [causes]
# rotate_kv must be right on NCCL, which ignores tags (lesson 02): K and V told apart by tags
# while the receives are posted in another order than the sends is right on gloo only.
WRONG += [(test_patterns.test_rotate_kv, ws, "patterns.causes:" + body,
           "once the tags were ignored")
          for body in ("rotate_tags_reordered", "rotate_tags_sends_reordered") for ws in (2, 3)]
