"""Lesson `gradients`'s learner bodies (tests/graders/bodies/gradients/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_gradients
from tests.harness.catalogue.messages import (BORROWED, BUILTIN, HUNG, ONLY, PARTNERS, ROAD,
                                             SHUFFLED, SIZES, SUMS)

WRONG: list = []
RIGHT: list = []

# [lesson]
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 2, "gradients:a2a_all_reduce",
     BUILTIN),
    (test_gradients.test_average_gradients_ring, 2, "gradients:ring_avg_all_reduce",
     BUILTIN),
    (test_gradients.test_average_gradients_ring, 2, "gradients:ring_avg_promoted",
     ("one flat buffer per dtype", *SIZES)),
    (test_gradients.test_average_gradients_ring, 2, "gradients:ring_avg_with_lab_ring",
     "average_gradients_ring calls ring_all_reduce (labs/ring.py), which is not solved yet"),
    (test_gradients.test_average_gradients_bucketed, 2, "gradients:bucketed_ignores_size",
     ("one buffer per bucket of plan_buckets", *SIZES)),
    (test_gradients.test_average_gradients_bucketed, 2, "gradients:bucketed_forward_order",
     ("one buffer per bucket of plan_buckets", *SIZES)),
    (test_gradients.test_average_gradients_bucketed, 2, "gradients:bucketed_closes_early",
     ("one buffer per bucket of plan_buckets", *SIZES)),
]

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 2, "gradients.unlisted3:a2a_in_float32",
     "each in its own dtype"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.unlisted3:ring_avg_by_all_to_all",
     PARTNERS),
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.unlisted3:bucketed_by_all_to_all",
     PARTNERS),
    (test_gradients.test_average_gradients_all_to_all, 2, "gradients.unlisted3:a2a_and_sgd_step",
     "changed the parameters of `model`"),
    (test_gradients.test_average_gradients_bucketed, 2,
     "gradients.unlisted3:bucketed_and_clip_params",
     "changed the parameters of `model`"),
    (test_gradients.test_average_gradients_ring, 7, "gradients.unlisted7:ring_avg_builtin_at_7",
     BUILTIN),
]

# [lesson]
# (grader, world sizes, a correct body in another style than solutions/)
RIGHT += [
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients:a2a_flat_per_dtype"),
    (test_gradients.test_average_gradients_ring, 3, "gradients:ring_avg_grouped"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients:bucketed_own_plan"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_gradients.test_average_gradients_all_to_all, 3,
     "gradients.others:a2a_receives_first_per_param"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.others:ring_avg_flatten_dense"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.others:ring_avg_aliased"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.others:bucketed_with_barrier"),
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.styles:ring_avg_flatten_dense_utils"),
    (test_gradients.test_average_gradients_ring, 2, "gradients.styles:ring_avg_grads_replaced"),
]

# [lesson]
# The method on dummy data, the answer by another road (tests/graders/bodies/<lesson>/roads.py).
WRONG += [
    (test_gradients.test_average_gradients_ring, 3, "gradients.roads:average_dummy_then_store",
     ROAD),
    (test_gradients.test_average_gradients_ring, 2, "gradients.styles:ring_avg_then_step",
     "changed the parameters of `model`"),
]

# [lesson]
# The course's own code communicating for the body: the reference, or lesson 10's engine.
WRONG += [
    (test_gradients.test_average_gradients_ring, 2,
     "gradients.borrowed:ring_avg_calls_the_reference",
     BORROWED),
]

# [red teams]
# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/<lesson>_red.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
WRONG += [
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_grads_in_kept_buffer",
     "a buffer (or list) you keep and reuse"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.red:bucketed_kept_views",
     "a buffer (or list) you keep and reuse"),
    (test_gradients.test_average_gradients_all_to_all, 3,
     "gradients.red:a2a_result_buffer_by_shape", "in the same memory"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red:a2a_modules_iteration",
     ("the method moves", "has to be contiguous")),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red:a2a_skips_zero_grads",
     ("SIGABRT", HUNG, "the method moves", "never sent")),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_reseeds",
     "random generator"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_hook_left_behind",
     "left a hook"),
]

# [red teams]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_default_arg"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.red:bucketed_default_arg"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_via_object"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red:a2a_peer_major"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red:ring_avg_sorted_by_name"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.red:bucketed_generator_style"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    # the frozen and unused parameters close a bucket early at bucket_bytes=25
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red2:bucketed_plan_over_all_params", "the method has"),
    (test_gradients.test_average_gradients_bucketed, 2,
     "gradients.red2:bucketed_plan_requires_grad", "the method has"),
]

# [red teams]
RIGHT += [
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red2:bucketed_forward_within_bucket"),
    (test_gradients.test_average_gradients_ring, 5, "gradients.red2:ring_avg_predivide"),
    (test_gradients.test_average_gradients_all_to_all, 4,
     "gradients.red2:a2a_tagged_mul_reciprocal"),
]

# [red teams]
# Sixth round, a third red team (tests/graders/bodies/<lesson>_red3.py): rank 1's replies made
# locally, a star one peer at a time, a root that is right only at the ends, bucket plans
# that close at DDP's first-bucket size or only above the cap, replicas that differ in their
# last bits; tags per round or per direction, sends waited at once in the pipeline.
WRONG += [
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.red3:bucketed_ddp_first_bucket",
     "the method has"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients.red3:bucketed_strict_cap",
     ("no message holds more than", "the method has")),
]

# [red teams]
RIGHT += [
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red3:bucketed_closure_per_bucket"),
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
    (test_gradients.test_average_gradients_ring, 3, "gradients.red5:ring_avg_two_dtypes_only",
     "bfloat16"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red5:a2a_half_as_float32",
     "bfloat16"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red5:a2a_no_contiguous",
     "has to be contiguous"),
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red5:bucketed_plan_cached_by_class", "other branch"),
    # torch's parameters_to_vector views each gradient: a channels_last one cannot be viewed
    (test_gradients.test_average_gradients_ring, 3, "gradients.red3:ring_avg_params_to_vector",
     "view size is not compatible"),
]

# [red teams]
RIGHT += [
    (test_gradients.test_average_gradients_all_to_all, 5, "gradients.red5:a2a_stack_mean"),
    (test_gradients.test_average_gradients_ring, 6, "gradients.red5:ring_avg_foreach"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red6:bucketed_accumulates_in_param_data", "wrote into its argument `model`"),
]

# [red teams]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red6:ring_avg_grads_as_bucket_views"),
]

# [ours]
# Tenth round, ours (tests/graders/bodies/<lesson>/red7_sums.py): what travels in a reduction (the
# partial sums, compared on a probe where every rank's tensor holds 2**rank, which makes them
# exact in any order and names the ranks each adds up; a gradient average may divide first)
# and in a broadcast (each message holds
# the data every rank ends with): a negated, doubled or XOR-encoded wire fails; another cut
# of the tensor, another chunk ownership, or adding in float64 passes.
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red7_sums:a2a_negated_wire",
     SUMS),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red7_sums:ring_avg_doubled_wire",
     SUMS),
]

# [ours]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 5, "gradients.red7_sums:ring_avg_predivided"),
]

# [ours]
# Eleventh round, ours (tests/graders/bodies/<lesson>/red8_gradients.py): gradient averages whose
# ring calls are for show (on zeros, the mean exchanged all to all), a relay where every rank
# should send to every other, a doubled wire; and peers visited in another order (right).
WRONG += [
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red8_gradients:bucketed_ring_for_show",
     ONLY),
    (test_gradients.test_average_gradients_ring, 4,
     "gradients.red8_gradients:ring_avg_ring_for_show",
     ONLY),
    # two ranks: the exchange's partners are the ring's; its messages are extra
    (test_gradients.test_average_gradients_bucketed, 2,
     "gradients.red8_gradients:bucketed_ring_for_show",
     "message(s) to rank 1; the method has"),
    (test_gradients.test_average_gradients_ring, 2,
     "gradients.red8_gradients:ring_avg_ring_for_show",
     "message(s) to rank 1; the method has"),
    # float16 gradients of 9 significant bits: bfloat16 (8) cannot add them up
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red6:a2a_halves_summed_in_bf16", "parameter 'fp16'"),
]

# [ours]
# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 3,
     "gradients.red9_late:a2a_sets_deterministic",
     "left torch's global settings changed (torch.use_deterministic_algorithms)"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red9_late:ring_avg_unfreezes",
     "a parameter's requires_grad"),
]

# [ours]
# Thirteenth round, a red team (tests/graders/bodies/<lesson>/red10.py): a receive buffer read
# through DLPack or its address, global settings (autocast, Python's and numpy's generators,
# a process-wide module hook), an alias made with _make_subclass, a bool tensor turned int64
# by a whole turn; and a halo exchanged once, three deep (scripts/halo_deep_once.py).
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red10:average_all_to_all_global_hook",
     "a global module hook"),
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red10:average_all_to_all_python_seed",
     "random (Python's generator)"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red12_b:a2a_delta_encoded",
     SHUFFLED),
]

# [ours]
# partial sums on the wire in another layout: a message keeps each gradient's order
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red13_layout:a2a_interleaved",
     SHUFFLED),
]

# [ours]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red13_layout:ring_avg_largest_first"),
    (test_gradients.test_average_gradients_all_to_all, 4,
     "gradients.red13_layout:a2a_reverse_order"),
]

# [ours]
RIGHT += [
    (test_gradients.test_average_gradients_all_to_all, 5, "gradients.red12_b:a2a_stack_sum"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red12_b:ring_avg_grad_views"),
    (test_gradients.test_average_gradients_ring, 4, "gradients.red12_b:ring_avg_divide_float64"),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red14_styles:ring_avg_flatten_dense"),
]

# [ours]
WRONG += [
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red15_more:ring_avg_one_float64_buffer",
     "no message holds more than"),
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red15_more:bucketed_ddp_first_bucket",
     "no message holds more than"),
    (test_gradients.test_average_gradients_bucketed, 3,
     "gradients.red15_more:bucketed_forward_order",
     "in the plan's order"),
]

# [ours]
RIGHT += [
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red15_more:a2a_assigns_new_grad"),
]

# [causes]
# A mean divides each bucket by the world size before the ring: the positional probe finds
# each element's position by its step from its neighbours, whatever the scale (it counted
# gradient pieces by whole-number values, which the division removes).
RIGHT += [(test_gradients.test_average_gradients_bucketed, ws, "gradients.causes:" + body)
          for body in ("bucketed_divides_first", "bucketed_divides_first_forward")
          for ws in (2, 3)]

# [causes]
# Issue 52 item 8: one ring per dtype, the groups in another order than the reference's, is
# right at every world size (the order check pairs messages within a dtype, not across calls).
RIGHT += [(test_gradients.test_average_gradients_ring, ws,
           "gradients.causes:ring_dtype_groups_reversed")
          for ws in (2, 4, 8)]

# [causes]
# Stateless bodies wrong on the first call: the value is the fault, not a result kept from an
# earlier call (the second call's check fired: the same values when only the data they leave
# out had changed). The check of the values speaks first.
WRONG += [(test_gradients.test_average_gradients_all_to_all, ws,
           "gradients.causes:a2a_mean_without_own", "is wrong at") for ws in (2, 3)]

# [causes]
# Issue 52 item 4: a dtype-only bug (float16 added up in bfloat16) is one problem that names
# the dtype, at a line of the body.
WRONG += [
    (test_gradients.test_average_gradients_all_to_all, 3,
     "gradients.report:all_to_all_sums_halves_in_bfloat16", "only float16 fails"),
]
