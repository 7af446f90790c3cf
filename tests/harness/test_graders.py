"""The graders themselves: each fails on the stub and on every wrong body learners write
(tests/graders/bodies/), saying what the lesson expected, and passes a correct body written
in another style than solutions/ (CI grades solutions/ in tests/graders). Unit tests feed
the checks and the grade sheet made-up results.
"""
import re
import time

import pytest
import torch

from labs.harness.grading import GradeFailure, call, check_messages, check_overlap
from labs.harness.grading.order import order_problems
from labs.harness.grading.ops import Op
from labs.harness.ranks.tracing import Event
from tests.graders import (test_algorithms, test_batching, test_collectives, test_deadlocks,
                           test_doctor, test_gradients, test_jobs, test_p2p, test_patterns, test_ring,
                           test_snippets, test_waiting)

BODIES = "tests.graders.bodies"
HUNG = "hung (world_size="
ANOTHER_RANK = "it to send only to"
BUILTIN = "the lesson builds this from point-to-point"
PARTNERS = "in this method rank"
SIZES = ("the method sends", "the method has", "no message holds more than")
FRESH = ("returned a tensor it was given", "shares memory with an argument")
ROAD = "while graded, data travels only through the process group"
# The order of posts and waits against the reference's (grading/order.py)
STEPS = "the method waits for that request first"
PIPELINE = "the pipeline forwards each segment as soon as it is reduced"
STAR = ("in this method rank", "never received", "never sent", "the method sends", "the method receives")

# A mismatch a checked exchange lets through: which rank sees it first is a race (the data's
# receive aborts on the short side, or a rank raises only after its data was sent).
CHECKED_LATE = ("returned instead of raising ValueError", "killed by signal",
                "refuse before that data moves")
SUMS_ANY = ("other values than the method's partial sums", "add up no rank's data",
            "out of the tensor's order")
# (grader, world size, body in tests/graders/bodies/<lesson>.py, what the failure must say)
WRONG = [
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_local", SIZES),
    (test_p2p.test_pass_token, 2, "p2p:pass_token_broadcast", BUILTIN),
    (test_p2p.test_pass_token, 1, "p2p:pass_token_same_at_one_rank", FRESH),
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_reply_local",
     "must be what arrived"),
    (test_p2p.test_ping_pong, 2, "p2p:ping_pong_clock_after_send",
     "time each round on its own"),
    (test_p2p.test_pass_token, 3, "p2p:pass_token_rank0_local",
     "must return the token that came back"),
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
    (test_patterns.test_neighbour_exchange_head_to_head, "float32", "patterns:exchange_blocking",
     HUNG),
    (test_patterns.test_rotate_kv, 2, "patterns:rotate_tags_crossed", "k_next (should be rank"),
    (test_patterns.test_rotate_kv, 2, "patterns:rotate_waits",
     "inside rotate_kv; hand back every request unwaited"),
]

# The kinds no grader names (tests/graders/bodies/unlisted.py): caught from the record and
# the reference, in general.
U = "unlisted:"
WRONG += [
    (test_ring.test_ring_all_reduce, 3, U + "ring_pg_allreduce", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, U + "ring_functional", BUILTIN),
    (test_ring.test_ring_all_reduce, 2, U + "ring_coalesced", BUILTIN),
    (test_waiting.test_safe_ring_shift, 3, U + "shift_all_to_all", BUILTIN),
    (test_collectives.test_p2p_all_gather, 2, U + "all_gather_object", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, U + "rs_straight_to_owner", PARTNERS),
    (test_ring.test_ring_all_reduce, 3, U + "ring_then_star", PARTNERS),
    (test_collectives.test_p2p_all_gather, 3, U + "all_gather_growing", "the method sends"),
    (test_p2p.test_pass_token, 3, U + "pass_token_star_any_source",
     ("from any source", PARTNERS)),
    (test_ring.test_ring_all_reduce, 2, U + "ring_float64_messages", "never widened"),
    (test_ring.test_ring_all_reduce, 2, U + "ring_builtin_when_small", BUILTIN),
    (test_ring.test_ring_all_reduce, 6, U + "ring_builtin_for_large_worlds", BUILTIN),
    (test_waiting.test_safe_ring_shift, 2, U + "shift_sends_never_waited", "never waited for"),
    (test_ring.test_ring_all_reduce, 3, U + "ring_sends_waited_at_the_end",
     ("written before the send was waited", STEPS)),
    (test_waiting.test_safe_ring_shift, 2, U + "shift_cached_result",
     "changed what an earlier call returned"),
    (test_collectives.test_p2p_all_gather, 2, U + "all_gather_cached_list",
     "changed what an earlier call returned"),
]

# Second round (tests/graders/bodies/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
U2, U3, U4, U5 = "unlisted2:", "unlisted3:", "unlisted4:", "unlisted5:"
U7 = "unlisted7:"      # unlisted6.py: lesson 11's job, graded under torchrun (below)
ROOT = ("whatever the route", *STAR)
WRONG += [
    (test_ring.test_ring_all_reduce, 3, U2 + "ring_thread_pg_allreduce", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, U2 + "rs_thread_all_reduce", BUILTIN),
    (test_collectives.test_p2p_broadcast, 3, U2 + "broadcast_thread", BUILTIN),
    (test_waiting.test_safe_ring_shift, 3, U2 + "shift_thread_all_to_all", BUILTIN),
    (test_ring.test_ring_all_reduce, 3, U2 + "ring_via_store", ROAD),
    (test_collectives.test_p2p_broadcast, 3, U2 + "broadcast_via_store", ROAD),
    (test_ring.test_ring_all_reduce, 2, U2 + "ring_builtin_when_large", BUILTIN),
    (test_collectives.test_p2p_all_gather, 5, U2 + "all_gather_builtin_beyond_4", BUILTIN),
    (test_p2p.test_pass_token, 6, U2 + "pass_token_builtin_at_6", BUILTIN),
    (test_collectives.test_p2p_broadcast, 7, U2 + "broadcast_builtin_beyond_4", BUILTIN),
    (test_patterns.test_rotate_kv, 3, U2 + "rotate_returns_receives_only",
     "returned without the request of a send"),
    (test_patterns.test_rotate_kv, 3, U2 + "rotate_waits_sends_inside",
     "inside rotate_kv; hand back every request unwaited"),
    (test_waiting.test_safe_ring_shift, 2, U2 + "shift_polls_is_completed",
     "polled is_completed()"),
    (test_waiting.test_safe_ring_shift, 2, U2 + "shift_cached_when_large",
     "changed what an earlier call returned"),
    (test_collectives.test_p2p_all_gather, 2, U2 + "all_gather_views_of_kept_buffer",
     "changed what an earlier call returned"),
    (test_p2p.test_ping_pong, 2, U2 + "ping_pong_clock_after_send",
     "time each round on its own"),
    (test_deadlocks.test_checked_exchange, 4, U2 + "checked_shape_after_data",
     "raised ValueError only after a send"),
    (test_ring.test_ring_all_reduce, 2, U2 + "ring_falls_back_to_builtin", BUILTIN),
    (test_algorithms.test_halving_doubling_all_reduce, 2, U2 + "halving_falls_back_to_builtin",
     BUILTIN),
    (test_p2p.test_ping_pong, 3, U3 + "ping_pong_subgroup_broadcast", BUILTIN),
    (test_p2p.test_pass_token, 3, U3 + "pass_token_send_object", "never widened"),
    (test_p2p.test_pass_token, 3, U3 + "pass_token_isend_unwaited", "never waited for"),
    (test_batching.test_exchange_with_neighbours, 3, U3 + "neighbours_float_as_int",
     "never widened"),
    (test_batching.test_ring_shift, 4, U3 + "ring_shift_any_source", "from any source"),
    (test_batching.test_all_pairs_exchange, 3, U3 + "all_pairs_sizes_by_object", BUILTIN),
    (test_waiting.test_safe_ring_shift, 3, U3 + "shift_as_bytes", "64 x uint8"),
    (test_deadlocks.test_exchange_batched, 4, U3 + "batched_receive_waited_only",
     "never waited for"),
    (test_deadlocks.test_exchange_parity_ordered, 4, U3 + "parity_by_rank_order",
     "recv first in every exchange"),
    (test_deadlocks.test_checked_exchange, 4, U3 + "checked_exchange_builtin_meta", BUILTIN),
    (test_ring.test_ring_reduce_scatter, 3, U3 + "rs_reversed_ring", PARTNERS),
    (test_ring.test_ring_all_reduce, 4, U3 + "ring_doubling_instead", PARTNERS),
    (test_ring.test_ring_all_reduce, 2, U3 + "ring_doubling_instead", (*SIZES, STEPS)),
    (test_ring.test_ring_all_reduce, 5, U3 + "ring_blocking_from_5", HUNG),
    (test_gradients.test_average_gradients_all_to_all, 2, U3 + "a2a_in_float32",
     "each in its own dtype"),
    (test_gradients.test_average_gradients_ring, 3, U3 + "ring_avg_by_all_to_all", PARTNERS),
    (test_gradients.test_average_gradients_bucketed, 3, U3 + "bucketed_by_all_to_all",
     PARTNERS),
    (test_collectives.test_p2p_gather, 3, U3 + "gather_by_object", BUILTIN),
    (test_collectives.test_p2p_all_gather, 3, U3 + "all_gather_reversed_ring", PARTNERS),
    (test_collectives.test_p2p_all_to_all, 3, U3 + "all_to_all_per_peer_batches",
     "in 2 batch_isend_irecv call(s)"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32", U3 + "forward_in_float64",
     "never widened"),
    (test_algorithms.test_tree_broadcast, 5, U3 + "tree_star", "a binomial tree needs"),
    (test_algorithms.test_recursive_doubling_all_reduce, 6, U3 + "doubling_builtin_at_6",
     BUILTIN),
    (test_algorithms.test_halving_doubling_all_reduce, 4, U3 + "halving_by_doubling",
     (*SIZES, STEPS)),
    (test_collectives.test_p2p_broadcast, 3, U3 + "broadcast_pg_methods",
     "outside batch_isend_irecv"),
    (test_collectives.test_p2p_all_to_all, 3, U3 + "all_to_all_pg_methods",
     "outside batch_isend_irecv"),
    (test_gradients.test_average_gradients_all_to_all, 2, U3 + "a2a_and_sgd_step",
     "changed the parameters of `model`"),
    (test_gradients.test_average_gradients_bucketed, 2, U3 + "bucketed_and_clip_params",
     "changed the parameters of `model`"),
    (test_collectives.test_p2p_gather, 2, U3 + "gather_builtin_when_large", BUILTIN),
    (test_deadlocks.test_exchange_batched, 2, U3 + "batched_polls_is_completed",
     "polled is_completed()"),
    (test_snippets.test_fixed_average_gradients, 2, U3 + "fixed_average_in_float32",
     "never widened"),
    (test_collectives.test_p2p_gather, 3, U4 + "gather_flood", ROOT),
    (test_collectives.test_p2p_broadcast, 3, U4 + "broadcast_echo", ROOT),
    (test_waiting.test_overlapped_step, 2, U4 + "step_pg_waits_first", "before computing"),
    (test_ring.test_pipelined_ring_all_reduce, 3, U5 + "pipelined_plain_ring_for_integers",
     SIZES + (PIPELINE,)),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     U5 + "backward_receives_into_grad", "changed its argument `input_grad`"),
    (test_batching.test_exchange_with_neighbours, 3, U5 + "neighbours_right_twice",
     "the method sends 1"),
    (test_waiting.test_overlapped_step, 2, U5 + "step_dummy_compute_in_flight",
     "before posting"),
    (test_batching.test_all_pairs_exchange, 3, U5 + "all_pairs_lengths_as_float",
     "1 x int64"),
    (test_snippets.test_fixed_average_gradients, 3, U5 + "fixed_average_barrier_not_wait",
     "never waited for"),
    (test_algorithms.test_tree_broadcast, 4, U5 + "tree_chain", "a binomial tree needs"),
    (test_waiting.test_safe_ring_shift, 5, U7 + "shift_builtin_beyond_4", BUILTIN),
    (test_deadlocks.test_exchange_batched, 8, U7 + "batched_builtin_at_8", BUILTIN),
    (test_waiting.test_overlapped_step, 6, U7 + "step_blocking_beyond_4", "before computing"),
    (test_collectives.test_p2p_all_to_all, 5, U7 + "all_to_all_builtin_beyond_4", BUILTIN),
    (test_gradients.test_average_gradients_ring, 7, U7 + "ring_avg_builtin_at_7", BUILTIN),
    (test_patterns.test_rotate_kv, 5, U7 + "rotate_waits_beyond_4",
     "inside rotate_kv; hand back every request unwaited"),
    (test_batching.test_exchange_with_neighbours, 2, U7 + "neighbours_one_tensor_twice",
     "returned the same memory twice"),
    (test_batching.test_exchange_with_neighbours, 1, U7 + "neighbours_one_copy_twice_at_one_rank",
     "returned the same memory twice"),
]

# (grader, world sizes, a correct body in another style than solutions/)
RIGHT = [
    (test_waiting.test_safe_ring_shift, 3, U + "shift_with_barrier"),
    (test_ring.test_ring_all_reduce, 3, U + "ring_with_barrier"),
    (test_waiting.test_overlapped_step, 2, U + "step_multi_dot"),
    (test_p2p.test_ping_pong, 3, "p2p:ping_pong_nonblocking"),
    (test_p2p.test_pass_token, 3, "p2p:pass_token_batched"),
    (test_batching.test_exchange_with_neighbours, 2, "batching:neighbours_receives_first"),
    (test_batching.test_ring_shift, 3, "batching:shift_unbatched"),
    (test_waiting.test_safe_ring_shift, 3, "waiting:shift_parity_blocking"),
    (test_waiting.test_overlapped_step, 2, "waiting:step_isend_irecv"),
    (test_deadlocks.test_exchange_batched, 4, "deadlocks:batched_receive_first"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks:parity_keywords"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks:checked_torch_size"),
    (test_ring.test_ring_reduce_scatter, 3, "ring:rs_isend_irecv"),
    (test_ring.test_ring_all_reduce, 3, "ring:ring_parity_blocking"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients:a2a_flat_per_dtype"),
    (test_gradients.test_average_gradients_ring, 3, "gradients:ring_avg_grouped"),
    (test_gradients.test_average_gradients_bucketed, 3, "gradients:bucketed_own_plan"),
    (test_collectives.test_p2p_all_gather, 3, "collectives:all_gather_ring_receive_first"),
    (test_collectives.test_p2p_all_to_all, 3, "collectives:all_to_all_receives_first"),
    (test_patterns.test_rotate_kv, 3, "patterns:rotate_receives_first_tagged"),
]
OTHER, OTHER2 = "others:", "others2:"     # second round: tests/graders/bodies/others*.py
RIGHT += [
    (test_p2p.test_ping_pong, 3, OTHER + "ping_pong_zeros_like_isend"),
    (test_p2p.test_ping_pong, 2, OTHER + "ping_pong_zeros_like_isend"),
    (test_p2p.test_pass_token, 5, OTHER + "pass_token_tagged_world_group"),
    (test_batching.test_exchange_with_neighbours, 3, OTHER + "neighbours_staged_group_peer"),
    (test_batching.test_ring_shift, 4, OTHER + "ring_shift_normalised_isend"),
    (test_waiting.test_safe_ring_shift, 3, OTHER + "shift_monitored_barrier_reverse_waits"),
    (test_waiting.test_overlapped_step, 3, OTHER + "step_einsum_tagged"),
    (test_deadlocks.test_exchange_batched, 4, OTHER + "batched_tagged_reverse"),
    (test_deadlocks.test_exchange_parity_ordered, 4, OTHER + "parity_world_group"),
    (test_deadlocks.test_checked_exchange, 4, OTHER + "checked_two_by_three"),
    (test_ring.test_ring_reduce_scatter, 3, OTHER + "rs_on_data_tagged"),
    (test_ring.test_ring_all_reduce, 3, OTHER + "ring_two_phases_own_buffers"),
    (test_ring.test_pipelined_ring_all_reduce, 3, OTHER + "pipelined_with_barriers"),
    (test_gradients.test_average_gradients_all_to_all, 3, OTHER + "a2a_receives_first_per_param"),
    (test_gradients.test_average_gradients_ring, 3, OTHER + "ring_avg_flatten_dense"),
    (test_gradients.test_average_gradients_ring, 3, OTHER + "ring_avg_aliased"),
    (test_gradients.test_average_gradients_bucketed, 3, OTHER + "bucketed_with_barrier"),
    (test_collectives.test_p2p_gather, 3, OTHER + "gather_receives_in_reverse"),
    (test_collectives.test_p2p_all_gather, 3, OTHER + "all_gather_with_barrier"),
    (test_collectives.test_p2p_all_to_all, 3, OTHER + "all_to_all_descending"),
    (test_patterns.test_neighbour_exchange_head_to_head, "int64", OTHER2 + "forward_tagged_detached"),
    (test_patterns.test_rotate_kv, 3, OTHER2 + "rotate_v_first"),
    (test_algorithms.test_tree_broadcast, 6, OTHER2 + "tree_batched"),
    (test_algorithms.test_recursive_doubling_all_reduce, 6, OTHER2 + "doubling_isend_irecv"),
    (test_algorithms.test_halving_doubling_all_reduce, 5, OTHER2 + "halving_with_barrier"),
    (test_snippets.test_fixed_average_gradients, 3, OTHER2 + "fixed_flat_receives_first"),
    (test_waiting.test_overlapped_step, 3, "unlisted4:step_pg_overlapped"),
    (test_patterns.test_rotate_kv, 3, OTHER2 + "rotate_with_barrier"),
    (test_collectives.test_p2p_all_gather, 3, OTHER2 + "all_gather_views_of_one_buffer"),
    (test_ring.test_ring_all_reduce, 3, "styles:ring_parity_blocking"),
    (test_ring.test_ring_all_reduce, 5, "styles:ring_isend_irecv"),
    (test_gradients.test_average_gradients_ring, 3, "styles:ring_avg_flatten_dense_utils"),
    (test_gradients.test_average_gradients_ring, 2, "styles:ring_avg_grads_replaced"),
]

# The method on dummy data, the answer by another road (tests/graders/bodies/roads.py).
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "roads:ring_dummy_then_store", ROAD),
    (test_ring.test_ring_reduce_scatter, 4, "roads:rs_dummy_then_prefix_store", ROAD),
    (test_collectives.test_p2p_all_gather, 3, "roads:all_gather_dummy_then_files", ROAD),
    (test_collectives.test_p2p_broadcast, 3, "roads:broadcast_dummy_then_shared_memory", ROAD),
    (test_p2p.test_pass_token, 3, "roads:pass_token_dummy_then_socket", ROAD),
    (test_gradients.test_average_gradients_ring, 3, "roads:average_dummy_then_store", ROAD),
    # a thread of its own is no road around the record: it sees every thread's calls
    (test_ring.test_ring_all_reduce, 3, "roads:ring_dummy_then_thread", BUILTIN),
    (test_ring.test_ring_all_reduce, 4, "roads:ring_dummy_then_thread_pg", BUILTIN),
    # the answer rebuilt from the inputs' seeds: the graders' seeds are not the lessons'
    (test_ring.test_ring_all_reduce, 3, "roads:ring_dummy_then_rebuilt",
     ("is wrong at", "the same values when")),
    (test_ring.test_ring_all_reduce, 2, "roads:ring_dummy_then_rebuilt_from_graders",
     ("asked the graders for their inputs", "never the machinery that grades it")),
    (test_gradients.test_average_gradients_ring, 2, "styles:ring_avg_then_step",
     "changed the parameters of `model`"),
]

# The ring the other way round: right values, not the route the contract fixes.
WRONG += [(test_ring.test_ring_all_reduce, 4, "styles:ring_counter_clockwise",
           "in the ring, rank")]

# The course's own code communicating for the body: the reference, or lesson 10's engine.
BORROWED = "the course's own code"
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "borrowed:ring_calls_the_reference", BORROWED),
    (test_ring.test_ring_all_reduce, 4, "borrowed:ring_calls_the_engine", BORROWED),
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "borrowed:doubling_calls_the_engine", BORROWED),
    (test_algorithms.test_halving_doubling_all_reduce, 5, "borrowed:halving_calls_the_engine",
     BORROWED),
    (test_collectives.test_p2p_all_gather, 3, "borrowed:all_gather_calls_the_reference",
     BORROWED),
    (test_gradients.test_average_gradients_ring, 2, "borrowed:ring_avg_calls_the_reference",
     BORROWED),
    (test_waiting.test_safe_ring_shift, 3, "borrowed:shift_calls_the_lesson", BORROWED),
    # lesson 07's broadcast and gather are the star; a tree or a chain is another method
    (test_collectives.test_p2p_broadcast, 4, "collectives:broadcast_tree", STAR),
    (test_collectives.test_p2p_gather, 4, "collectives:gather_tree", STAR),
    (test_collectives.test_p2p_broadcast, 4, OTHER + "broadcast_chain", STAR),
]

# Third round (tests/graders/bodies/memory.py): the caller's memory, precision, a receive
# buffer used before its wait, extra or relayed messages, the method for small tensors only.
M, MEMORY = "memory:", "replaced the memory of its argument"
IN_FLIGHT = "a buffer belongs to the transfer from post to wait"
WRONG += [
    (test_ring.test_ring_all_reduce, 3, M + "ring_into_new_memory", MEMORY),
    (test_algorithms.test_tree_broadcast, 5, M + "tree_into_new_memory", MEMORY),
    (test_collectives.test_p2p_all_to_all, 3, M + "all_to_all_new_outputs", MEMORY),
    (test_collectives.test_p2p_gather, 3, M + "gather_negates_for_a_moment",
     "wrote into its argument `tensor` and put its values back"),
    (test_ring.test_ring_all_reduce, 3, M + "ring_adds_in_float32", "is wrong at"),
    (test_algorithms.test_recursive_doubling_all_reduce, 4, M + "doubling_adds_in_float64",
     "is wrong at"),
    (test_ring.test_ring_all_reduce, 3, M + "ring_adds_before_waiting",
     ("receive buffer was used", IN_FLIGHT)),
    (test_collectives.test_p2p_broadcast, 4, M + "broadcast_then_gossip", STAR),
    (test_collectives.test_p2p_broadcast, 4, M + "broadcast_relayed_by_one_rank", STAR),
    (test_collectives.test_p2p_gather, 3, M + "gather_sends_twice", STAR),
    (test_algorithms.test_tree_broadcast, 5, M + "tree_star_for_small", "a binomial tree needs"),
    (test_ring.test_pipelined_ring_all_reduce, 3, M + "pipelined_one_segment_at_a_time",
     ("never had two receives in flight", PIPELINE)),
    # one step at a time, whole: with one segment per chunk, lesson 05's plain ring
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring:pipelined_step_batches",
     ("never had two receives in flight", PIPELINE)),
]

# Fourth round: written by a red team that read the stubs, the graders and the bodies above
# (tests/graders/bodies/red_*.py, names as they wrote them): probes on every case and world
# size, the partner given as an argument, v shaped unlike k, gradients that are not tensors
# of their own or a kept buffer, state a call leaves behind, lists that are tuples.
R = "red_"
ARRIVED = ("must be what arrived", "returns what it received", "came back to it")
WRONG += [
    (test_p2p.test_ping_pong, 3, R + "p2p:pp_fixed_three",
     ("the method sends 1", "sends nothing in this case")),
    (test_p2p.test_ping_pong, 2, R + "p2p:pp_avg_seconds",
     ("time each round on its own", "raised ZeroDivisionError")),
    (test_p2p.test_ping_pong, 2, R + "p2p:pp_fake_seconds", "time each round on its own"),
    (test_p2p.test_ping_pong, 3, R + "p2p:pp_rank1_from_first",
     (*ARRIVED, "holding other values than the method sends")),
    (test_p2p.test_ping_pong, 5, R + "p2p:pp_local_beyond_two", ARRIVED),
    (test_p2p.test_ping_pong, 2, R + "p2p:pp_int_dtypes_local", ARRIVED),
    (test_p2p.test_pass_token, 4, R + "p2p:pt_local_beyond_three", ARRIVED),
    (test_batching.test_all_pairs_exchange, 3, R + "batching:pairs_no_contiguous",
     "has to be contiguous"),
    (test_waiting.test_overlapped_step, 2, R + "waiting:step_float32_product", "is wrong at"),
    (test_deadlocks.test_checked_exchange, 4, R + "deadlocks:checked_rank_xor", PARTNERS),
    (test_patterns.test_rotate_kv, 3, R + "patterns:rotate_v_like_k",
     ("the method receives", "is wrong at", "shape")),
    # a chunk that is a strided view (the contract: contiguous or not) is sent as is
    (test_batching.test_all_pairs_exchange, 3, "batching:all_pairs_by_peer",
     "has to be contiguous"),
    (test_batching.test_all_pairs_exchange, 3, OTHER + "all_pairs_receives_first_monitored",
     "has to be contiguous"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32", R + "pipeline_peer:", HUNG),
    (test_snippets.test_fixed_average_gradients, 2, R + "snippets:avg_float32_arith",
     "is wrong at"),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_grads_in_kept_buffer",
     "a buffer (or list) you keep and reuse"),
    (test_gradients.test_average_gradients_bucketed, 3, R + "gradients:bucketed_kept_views",
     "a buffer (or list) you keep and reuse"),
    (test_gradients.test_average_gradients_all_to_all, 3,
     R + "gradients:a2a_result_buffer_by_shape", "in the same memory"),
    (test_gradients.test_average_gradients_all_to_all, 3, R + "gradients:a2a_modules_iteration",
     ("the method moves", "has to be contiguous")),
    (test_gradients.test_average_gradients_all_to_all, 3, R + "gradients:a2a_skips_zero_grads",
     ("SIGABRT", HUNG, "the method moves", "never sent")),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_reseeds",
     "random generator"),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_hook_left_behind",
     "left a hook"),
    (test_collectives.test_p2p_gather, 3, R + "collectives:gather_returns_tuple",
     "expected a list"),
    (test_collectives.test_p2p_all_gather, 3, R + "collectives:all_gather_returns_tuple",
     "expected a list"),
]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, R + "waiting:step_type_as_first"),
    (test_waiting.test_overlapped_step, 3, R + "waiting:step_shape_check_first"),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_default_arg"),
    (test_gradients.test_average_gradients_bucketed, 3, R + "gradients:bucketed_default_arg"),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_via_object"),
    (test_collectives.test_p2p_broadcast, 4, R + "collectives:broadcast_blocking_pg_group"),
    (test_collectives.test_p2p_gather, 3, R + "collectives:gather_into_one_buffer"),
    (test_collectives.test_p2p_all_gather, 3, R + "collectives:all_gather_forward_scratch"),
    (test_collectives.test_p2p_all_to_all, 3, R + "collectives:all_to_all_zip_style"),
    (test_gradients.test_average_gradients_all_to_all, 3, R + "gradients:a2a_peer_major"),
    (test_gradients.test_average_gradients_ring, 3, R + "gradients:ring_avg_sorted_by_name"),
    (test_gradients.test_average_gradients_bucketed, 3, R + "gradients:bucketed_generator_style"),
]

# Fifth round, a second red team (tests/graders/bodies/red2_*.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
R2 = "red2_"
KEPT = "a buffer (or list) you keep and reuse"
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, R2 + "waiting:shift_double_buffered", KEPT),
    (test_collectives.test_p2p_all_gather, 3, R2 + "collectives:all_gather_double_buffered", KEPT),
    (test_batching.test_exchange_with_neighbours, 3, R2 + "batching:neighbours_double_buffered",
     KEPT),
    (test_p2p.test_pass_token, 3, R2 + "p2p:pass_token_double_buffered", KEPT),
    # (the sums probe calls it a third time: its two buffers then deadlock the ranks)
    (test_snippets.test_fixed_average_gradients, 2, R2 + "snippets:fixed_average_double_buffered",
     (KEPT, HUNG)),
    (test_patterns.test_rotate_kv, 3, R2 + "patterns:rotate_double_buffered", KEPT),
    (test_deadlocks.test_exchange_batched, 2, R2 + "deadlocks:batched_double_buffered", KEPT),
    (test_collectives.test_p2p_all_gather, 4, R2 + "collectives:all_gather_waits_receive_only",
     STEPS),
    (test_batching.test_all_pairs_exchange, 3, R2 + "batching:all_pairs_waits_size_receives_only",
     STEPS),
    (test_ring.test_pipelined_ring_all_reduce, 3, R2 + "ring:pipelined_step_synchronous",
     PIPELINE),
    # the frozen and unused parameters close a bucket early at bucket_bytes=25
    (test_gradients.test_average_gradients_bucketed, 3,
     R2 + "gradients:bucketed_plan_over_all_params", "the method has"),
    (test_gradients.test_average_gradients_bucketed, 2,
     R2 + "gradients:bucketed_plan_requires_grad", "the method has"),
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     R2 + "algorithms:doubling_wide_accumulator", "every rank must end with the same bits"),
    (test_algorithms.test_tree_broadcast, 8, R2 + "algorithms:tree_binary", "a binomial tree"),
]
RIGHT += [
    (test_waiting.test_overlapped_step, 2, R2 + "waiting:step_linear"),
    (test_waiting.test_overlapped_step, 3, R2 + "waiting:step_transposed_product"),
    (test_waiting.test_overlapped_step, 2, R2 + "waiting:step_row_chunks"),
    (test_waiting.test_safe_ring_shift, 3, R2 + "waiting:shift_empty_plus_copy"),
    (test_batching.test_ring_shift, 3, R2 + "batching:ring_shift_isend_first_blocking_recv"),
    (test_batching.test_all_pairs_exchange, 4, R2 + "batching:all_pairs_skips_empty"),
    (test_deadlocks.test_checked_exchange, 4, R2 + "deadlocks:checked_meta_blocking_then_batched"),
    (test_p2p.test_pass_token, 5, R2 + "p2p:pass_token_isend_chain"),
    (test_collectives.test_p2p_gather, 3, R2 + "collectives:gather_stack_unbind"),
    (test_patterns.test_rotate_kv, 3, R2 + "patterns:rotate_explicit_group_tuple"),
    (test_ring.test_pipelined_ring_all_reduce, 3, R2 + "ring:pipelined_window"),
    (test_ring.test_pipelined_ring_all_reduce, 4, R2 + "ring:pipelined_balanced_segments"),
    (test_ring.test_ring_all_reduce, 5, R2 + "ring:ring_padded"),
    (test_ring.test_ring_reduce_scatter, 3, R2 + "ring:rs_tagged_group_none"),
    (test_gradients.test_average_gradients_bucketed, 3, R2 + "gradients:bucketed_forward_within_bucket"),
    (test_gradients.test_average_gradients_ring, 5, R2 + "gradients:ring_avg_predivide"),
    (test_gradients.test_average_gradients_all_to_all, 4, R2 + "gradients:a2a_tagged_mul_reciprocal"),
    (test_algorithms.test_halving_doubling_all_reduce, 7, R2 + "algorithms:halving_swapped_halves"),
    (test_algorithms.test_tree_broadcast, 6, R2 + "algorithms:tree_isend_children"),
]

# Sixth round, a third red team (tests/graders/bodies/red3_*.py): rank 1's replies made
# locally, a star one peer at a time, a root that is right only at the ends, bucket plans
# that close at DDP's first-bucket size or only above the cap, replicas that differ in their
# last bits; tags per round or per direction, sends waited at once in the pipeline.
R3 = "red3_"
WRONG += [
    (test_p2p.test_ping_pong, 2, R3 + "p2p:ping_pong_rank1_running_reply", "whatever arrived"),
    (test_p2p.test_ping_pong, 3, R3 + "p2p:ping_pong_rank1_replies_start",
     ("whatever arrived", "holding other values than the method sends")),
    (test_collectives.test_p2p_broadcast, 3, R3 + "collectives:broadcast_serial",
     "in ONE batch_isend_irecv call"),
    (test_collectives.test_p2p_gather, 3, R3 + "collectives:gather_serial",
     "in ONE batch_isend_irecv call"),
    (test_collectives.test_p2p_gather, 3, R3 + "collectives:gather_root_at_ends",
     ("is wrong at", "the same values when")),
    (test_gradients.test_average_gradients_bucketed, 3, R3 + "gradients:bucketed_ddp_first_bucket",
     "the method has"),
    (test_gradients.test_average_gradients_bucketed, 3, R3 + "gradients:bucketed_strict_cap",
     ("no message holds more than", "the method has")),
    (test_algorithms.test_recursive_doubling_all_reduce, 4, R3 + "algorithms:doubling_others_buffer",
     "every rank must end with the same bits"),
]
RIGHT += [
    (test_p2p.test_ping_pong, 3, R3 + "p2p:ping_pong_round_tags"),
    (test_p2p.test_ping_pong, 3, R3 + "p2p:ping_pong_direction_tags"),
    (test_p2p.test_pass_token, 5, R3 + "p2p:pass_token_hop_tags"),
    (test_collectives.test_p2p_all_gather, 3, R3 + "collectives:all_gather_step_tags"),
    (test_ring.test_pipelined_ring_all_reduce, 3, R3 + "ring:pipelined_send_waited_at_once"),
    (test_ring.test_pipelined_ring_all_reduce, 3, R3 + "ring:pipelined_blocking_forward"),
    (test_ring.test_ring_all_reduce, 5, R3 + "ring:ring_group_world"),
    (test_ring.test_ring_reduce_scatter, 5, R3 + "ring:rs_parity_blocking"),
    (test_gradients.test_average_gradients_bucketed, 3, R3 + "gradients:bucketed_closure_per_bucket"),
    (test_algorithms.test_recursive_doubling_all_reduce, 5, R3 + "algorithms:doubling_parity_blocking"),
    (test_algorithms.test_tree_broadcast, 6, R3 + "algorithms:tree_far_child_first"),
    (test_algorithms.test_tree_broadcast, 7, R3 + "algorithms:tree_mirrored"),
    (test_algorithms.test_halving_doubling_all_reduce, 6, R3 + "algorithms:halving_others_kept"),
]

# Seventh round, a fourth red team (tests/graders/bodies/red4_*.py): checked_exchange
# with dtypes of one element size, or its data outside a batch; the neighbour exchange
# ungrouped (NCCL needs the pair grouped: stages 0 and 2 are both even, so a parity order
# by global rank does not help) or on a transposed view.
R4 = "red4_"
ONE_BATCH = "in ONE batch"
WRONG += [
    (test_deadlocks.test_checked_exchange, 2, R4 + "deadlocks:checked_itemsize",
     "returned instead of raising ValueError"),
    (test_deadlocks.test_checked_exchange, 4, R4 + "deadlocks:checked_ungrouped_data", ONE_BATCH),
    (test_deadlocks.test_checked_exchange, 4, R4 + "deadlocks:checked_parity", ONE_BATCH),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     R4 + "patterns:fwd_ungrouped_contiguous", ONE_BATCH),
    (test_patterns.test_neighbour_exchange_head_to_head, "int64", R4 + "patterns:fwd_no_contiguous",
     "has to be contiguous"),
    (test_patterns.test_neighbour_exchange_head_to_head, "int64",
     "patterns:exchange_parity_nonblocking", ("has to be contiguous", ONE_BATCH)),
]
RIGHT += [
    (test_patterns.test_neighbour_exchange_head_to_head, "int64", R4 + "patterns:fwd_recv_first"),
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 5, R4 + "patterns:fwd_recv_first"),
    (test_patterns.test_rotate_kv, 3, R4 + "patterns:rotate_send_clones"),
    (test_deadlocks.test_exchange_parity_ordered, 4, R4 + "deadlocks:parity_by_peer"),
]

# Eighth round, a fifth red team (tests/graders/bodies/red5_*.py): what travels (a message
# that is a difference from the last call's, lengths in bytes, a token forwarded unchanged,
# a negated tensor: the bytes of every send are compared with the reference's); receives
# into memory the caller lent (through `.data`, numpy, a parameter); the store reached
# through torch's own helper; the product before posting; mismatches in one property only;
# an empty "handshake" that hid a step's late waits; a memo of the rank's own input; half
# precisions, a non-contiguous gradient, a plan kept from another model of the class.
R5 = "red5_"
CONTENTS = "holding other values than the method sends"
INTO = "received into the memory of its argument"
WRONG += [
    (test_p2p.test_pass_token, 4, R5 + "p2p:pass_token_last_adds_all", CONTENTS),
    (test_waiting.test_safe_ring_shift, 3, R5 + "waiting:shift_delta_encoded", CONTENTS),
    (test_deadlocks.test_exchange_batched, 4, R5 + "deadlocks:batched_delta_encoded", CONTENTS),
    (test_batching.test_all_pairs_exchange, 3, R5 + "batching:all_pairs_lengths_in_bytes",
     CONTENTS),
    (test_collectives.test_p2p_gather, 3, R5 + "collectives:gather_negates_via_data",
     (CONTENTS, "held other values than it was given", "wrote into its argument")),
    (test_collectives.test_p2p_broadcast, 3, R5 + "collectives:broadcast_via_torch_store_helper",
     ROAD),
    (test_waiting.test_safe_ring_shift, 3, R5 + "waiting:shift_scratch_in_input_data", INTO),
    (test_deadlocks.test_exchange_batched, 2, R5 + "deadlocks:exchange_numpy_scratch", INTO),
    (test_snippets.test_fixed_average_gradients, 3, R5 + "snippets:fixed_average_params_as_scratch",
     INTO),
    (test_waiting.test_overlapped_step, 3, R5 + "waiting:step_product_before_posting",
     "before posting"),
    (test_deadlocks.test_checked_exchange, 4, R5 + "deadlocks:checked_zip_shapes", CHECKED_LATE),
    (test_deadlocks.test_checked_exchange, 4, R5 + "deadlocks:checked_dtype_by_kind_and_size",
     "returned instead of raising ValueError"),
    (test_ring.test_ring_all_reduce, 3, R5 + "ring:ring_lazy_send_waits_handshake", STEPS),
    (test_ring.test_pipelined_ring_all_reduce, 3, R5 + "ring:pipelined_step_synchronous_handshake",
     PIPELINE),
    # odd ranks return their memo while even ranks run the ring: stale, or gloo aborts, or
    # it hangs
    (test_ring.test_ring_all_reduce, 3, R5 + "ring:ring_memo_same_input",
     ("the same values when", "killed by signal", HUNG, "is wrong at flat index")),
    (test_gradients.test_average_gradients_ring, 3, R5 + "gradients:ring_avg_two_dtypes_only",
     "bfloat16"),
    (test_gradients.test_average_gradients_all_to_all, 3, R5 + "gradients:a2a_half_as_float32",
     "bfloat16"),
    (test_gradients.test_average_gradients_all_to_all, 3, R5 + "gradients:a2a_no_contiguous",
     "has to be contiguous"),
    (test_gradients.test_average_gradients_bucketed, 3,
     R5 + "gradients:bucketed_plan_cached_by_class", "other branch"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float64", R5 + "patterns:fwd_float32_wire",
     "own dtype"),
    # torch's parameters_to_vector views each gradient: a channels_last one cannot be viewed
    (test_gradients.test_average_gradients_ring, 3, R3 + "gradients:ring_avg_params_to_vector",
     "view size is not compatible"),
]
RIGHT += [
    (test_p2p.test_ping_pong, 2, R5 + "p2p:ping_pong_any_source"),
    (test_p2p.test_pass_token, 3, R5 + "p2p:pass_token_any_source"),
    (test_waiting.test_overlapped_step, 2, R5 + "waiting:step_column_halves"),
    (test_waiting.test_overlapped_step, 2, R5 + "waiting:step_split_k"),
    (test_waiting.test_overlapped_step, 2, R5 + "waiting:step_broadcast_multiply_sum"),
    (test_waiting.test_safe_ring_shift, 5, R5 + "waiting:shift_blocking_chain"),
    (test_collectives.test_p2p_all_to_all, 3, R5 + "collectives:all_to_all_via_temporaries"),
    (test_snippets.test_fixed_average_gradients, 3,
     R5 + "snippets:fixed_average_predivided_in_place"),
    (test_ring.test_ring_all_reduce, 3, R5 + "ring:ring_via_contiguous_copy"),
    (test_ring.test_ring_reduce_scatter, 3, R5 + "ring:rs_tensor_split"),
    (test_gradients.test_average_gradients_all_to_all, 5, R5 + "gradients:a2a_stack_mean"),
    (test_gradients.test_average_gradients_ring, 6, R5 + "gradients:ring_avg_foreach"),
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16", R5 + "patterns:fwd_flat_wire"),
    (test_algorithms.test_tree_broadcast, 6, R5 + "algorithms:tree_range_split"),
    (test_algorithms.test_recursive_doubling_all_reduce, 7, R5 + "algorithms:doubling_own_fold"),
]

# Ninth round, a sixth red team (tests/graders/bodies/red6_*.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
R6 = "red6_"
STALE = "the same values when"
WRONG += [
    # (it was in RIGHT: with rounds=0 it leaves a receive posted, which takes a later message)
    (test_p2p.test_ping_pong, 2, R3 + "p2p:ping_pong_prepost", "never waited for"),
    (test_p2p.test_ping_pong, 2, R6 + "p2p:ping_pong_do_while", "sends nothing in this case"),
    (test_p2p.test_ping_pong, 2, R6 + "p2p:ping_pong_int_via_float", CONTENTS),
    (test_waiting.test_safe_ring_shift, 3, R6 + "waiting:safe_ring_shift_reuses_last_input",
     ("changed `tensor`", "changed what an earlier call returned")),
    (test_waiting.test_overlapped_step, 2, R6 + "waiting:overlapped_step_storage_escape",
     "the weight left torch (untyped_storage)"),
    (test_deadlocks.test_exchange_batched, 2, R6 + "deadlocks:exchange_batched_memo_same_object",
     (STALE, HUNG)),
    (test_collectives.test_p2p_gather, 3, R6 + "collectives:gather_own_slot_times_one",
     ("expected shape (5,) torch.bool", "the same bits required")),
    (test_collectives.test_p2p_broadcast, 3, R6 + "collectives:broadcast_reuses_last_tensor",
     "changed what an earlier call returned"),
    (test_ring.test_ring_all_reduce, 3, R6 + "ring:ring_memo_still_communicates", STALE),
    (test_algorithms.test_tree_broadcast, 7, R6 + "algorithms:tree_any_source_recv",
     "every receive names its sender"),
    (test_gradients.test_average_gradients_bucketed, 3,
     R6 + "gradients:bucketed_accumulates_in_param_data", "wrote into its argument `model`"),
    (test_snippets.test_fixed_average_gradients, 3,
     R6 + "snippets:fixed_average_skips_add_when_mine_repeats", STALE),
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 4,
     R6 + "patterns:fwd_memo_by_own_output", STALE),
]
RIGHT += [
    (test_p2p.test_ping_pong, 2, R6 + "p2p:ping_pong_final_barrier"),
    (test_p2p.test_pass_token, 3, R6 + "p2p:pass_token_prepost"),
    (test_p2p.test_pass_token, 3, R6 + "p2p:pass_token_barrier_first"),
    (test_waiting.test_overlapped_step, 2, R6 + "waiting:overlapped_step_matmul_out"),
    (test_deadlocks.test_exchange_parity_ordered, 2, R6 + "deadlocks:parity_ordered_any_source_recv"),
    (test_collectives.test_p2p_gather, 3, R6 + "collectives:gather_rows_view_minus_one"),
    (test_collectives.test_p2p_all_to_all, 3, R6 + "collectives:all_to_all_rotated_posts"),
    (test_ring.test_ring_all_reduce, 5, R6 + "ring:ring_skips_empty_chunks"),
    (test_algorithms.test_tree_broadcast, 6, R6 + "algorithms:tree_scratch_then_copy"),
    (test_gradients.test_average_gradients_ring, 3, R6 + "gradients:ring_avg_grads_as_bucket_views"),
    (test_snippets.test_fixed_average_gradients, 4, R6 + "snippets:fixed_average_reversed_orders"),
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16",
     R6 + "patterns:fwd_receive_first_detached_clone"),
    (test_patterns.test_pipeline_1f1b_matches_unsplit_model, 3,
     R6 + "patterns:fwd_receive_first_detached_clone"),
]

# Tenth round, ours (tests/graders/bodies/red7_sums.py): what travels in a reduction (the
# partial sums, compared on a probe where every rank's tensor holds 2**rank, which makes them
# exact in any order and names the ranks each adds up; a gradient average may divide first)
# and in a broadcast (each message holds
# the data every rank ends with): a negated, doubled or XOR-encoded wire fails; another cut
# of the tensor, another chunk ownership, or adding in float64 passes.
R7 = "red7_sums:"
# On the positional probe, an encoding of the sums may show first as values that add up no
# rank, or as a message out of the tensor's order.
SUMS = ("other values than the method's partial sums", "add up no rank's data",
        "out of the tensor's order")
WRONG += [
    (test_ring.test_ring_all_reduce, 3, R6 + "ring:ring_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 3, R6 + "ring:ring_xor_delta_wire", SUMS),
    (test_algorithms.test_recursive_doubling_all_reduce, 5,
     R6 + "algorithms:doubling_negated_wire", SUMS),
    (test_ring.test_ring_reduce_scatter, 3, R7 + "rs_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 4, R7 + "ring_doubled_wire", SUMS),
    (test_ring.test_pipelined_ring_all_reduce, 3, R7 + "pipelined_doubled_wire", SUMS),
    (test_algorithms.test_halving_doubling_all_reduce, 6, R7 + "halving_scaled_wire", SUMS),
    (test_algorithms.test_tree_broadcast, 4, R7 + "tree_bits_flipped",
     "holding other values than the tensor the broadcast delivers"),
    (test_gradients.test_average_gradients_all_to_all, 3, R7 + "a2a_negated_wire", SUMS),
    (test_gradients.test_average_gradients_ring, 3, R7 + "ring_avg_doubled_wire", SUMS),
    # a partner's data added where it lives, never sent back to it
    (test_algorithms.test_recursive_doubling_all_reduce, 4, R7 + "doubling_combined_sent_back",
     SUMS),
    (test_algorithms.test_recursive_doubling_all_reduce, 6, R7 + "doubling_combined_sent_back",
     SUMS),
]
RIGHT += [
    (test_ring.test_ring_all_reduce, 4, R7 + "ring_other_owner"),
    (test_ring.test_ring_all_reduce, 5, R7 + "ring_accumulates_in_float64"),
    (test_algorithms.test_halving_doubling_all_reduce, 6, R7 + "halving_larger_chunks_last"),
    (test_gradients.test_average_gradients_ring, 5, R7 + "ring_avg_predivided"),
    # the order of partners is free: which sum goes to which peer, and with extra ranks
    # folded in, how many ranks each adds up
    (test_algorithms.test_halving_doubling_all_reduce, 6, "algorithms:halving_near_first"),
    (test_algorithms.test_recursive_doubling_all_reduce, 7, "algorithms:doubling_far_first"),
]

# Eleventh round, ours (tests/graders/bodies/red8_gradients.py): gradient averages whose
# ring calls are for show (on zeros, the mean exchanged all to all), a relay where every rank
# should send to every other, a doubled wire; and peers visited in another order (right).
R8 = "red8_gradients:"
ONLY = "in this method rank 0 sends to rank 1 only"
WRONG += [
    (test_gradients.test_average_gradients_bucketed, 3, R8 + "bucketed_ring_for_show", ONLY),
    (test_gradients.test_average_gradients_ring, 4, R8 + "ring_avg_ring_for_show", ONLY),
    # two ranks: the exchange's partners are the ring's; its messages are extra
    (test_gradients.test_average_gradients_bucketed, 2, R8 + "bucketed_ring_for_show",
     "message(s) to rank 1; the method has"),
    (test_gradients.test_average_gradients_ring, 2, R8 + "ring_avg_ring_for_show",
     "message(s) to rank 1; the method has"),
    (test_snippets.test_fixed_average_gradients, 3, R8 + "fixed_average_relayed",
     "never sent anything to rank"),
    (test_snippets.test_fixed_average_gradients, 3, R8 + "fixed_average_doubled_wire", SUMS),
    # float16 gradients of 9 significant bits: bfloat16 (8) cannot add them up
    (test_gradients.test_average_gradients_all_to_all, 2,
     R6 + "gradients:a2a_halves_summed_in_bf16", "parameter 'fp16'"),
]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 4, R8 + "fixed_average_peers_descending"),
]

# Twelfth round, a red team (tests/graders/bodies/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
E9, L9 = "red9_early:", "red9_late:"
PRIVATE = "never the machinery that grades it"
WRONG += [
    (test_waiting.test_overlapped_step, 2, E9 + "step_hidden_product_first", PRIVATE),
    (test_waiting.test_overlapped_step, 3, E9 + "step_hidden_product_after_wait", PRIVATE),
    (test_snippets.test_fixed_average_gradients, 2, E9 + "average_hidden_all_reduce", PRIVATE),
    (test_snippets.test_fixed_average_gradients, 2, E9 + "average_via_shared_file", PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, E9 + "shift_tampers_with_grader", PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, E9 + "shift_flips_send_in_flight",
     "its send buffer was written (neg_) before the send was waited"),
    (test_batching.test_exchange_with_neighbours, 3, E9 + "neighbours_flips_send_in_flight",
     "its send buffer was written"),
    (test_waiting.test_safe_ring_shift, 3, E9 + "shift_reads_before_wait",
     "its receive buffer was read (numpy) before the receive was waited"),
    (test_deadlocks.test_exchange_batched, 2, E9 + "batched_reads_before_wait",
     "its receive buffer was read (numpy)"),
    (test_snippets.test_fixed_average_gradients, 3, E9 + "average_reads_before_wait",
     "its receive buffer was read (numpy)"),
    (test_batching.test_ring_shift, 8, E9 + "ring_shift_relays_long_shifts", PARTNERS),
    (test_deadlocks.test_checked_exchange, 2, E9 + "checked_partial_shape",
     "(2, 4, 3) torch.float32: returned instead of raising ValueError"),
    (test_p2p.test_ping_pong, 2, E9 + "ping_pong_pool_of_four", "the same memory twice"),
    (test_waiting.test_safe_ring_shift, 4, E9 + "shift_empty_shortcut",
     "expected shape (0, 2)"),
    (test_deadlocks.test_exchange_batched, 3, E9 + "batched_head_to_head_at_odd_world", HUNG),
    (test_gradients.test_average_gradients_all_to_all, 3, L9 + "a2a_sets_deterministic",
     "left torch's global settings changed (torch.use_deterministic_algorithms)"),
    (test_gradients.test_average_gradients_ring, 3, L9 + "ring_avg_unfreezes",
     "a parameter's requires_grad"),
    (test_ring.test_ring_all_reduce, 2, L9 + "ring_bare_assert",
     "raised AssertionError: (no message)"),
    # a cache for large tensors only: the call-again probe runs on the largest cases too
    (test_ring.test_ring_all_reduce, 3, L9 + "ring_memo_large", "the same values when"),
    # two receives in flight once, then one segment at a time
    (test_ring.test_pipelined_ring_all_reduce, 3, L9 + "pipelined_prefetch_once",
     "with no receive posted for the next one"),
]
RIGHT += [
    (test_batching.test_all_pairs_exchange, 3, E9 + "all_pairs_zero_dim_lengths"),
    (test_batching.test_all_pairs_exchange, 4, E9 + "all_pairs_lengths_in_one_tensor"),
    (test_waiting.test_overlapped_step, 3, E9 + "step_tensordot"),
    (test_waiting.test_overlapped_step, 2, E9 + "step_product_in_thread"),
    (test_p2p.test_ping_pong, 3, E9 + "ping_pong_rank1_preposts"),
    (test_snippets.test_fixed_average_gradients, 3, E9 + "average_into_flat_views"),
    (test_snippets.test_fixed_average_gradients, 3, E9 + "average_waits_receives_then_sends"),
    (test_deadlocks.test_checked_exchange, 4, E9 + "checked_equal_meta"),
    (test_ring.test_ring_all_reduce, 7, L9 + "ring_strided_chunks"),
    (test_algorithms.test_halving_doubling_all_reduce, 6, L9 + "halving_gather_via_scratch"),
    (test_collectives.test_p2p_all_gather, 4, L9 + "all_gather_sends_input_first"),
    (test_collectives.test_p2p_all_to_all, 8, L9 + "all_to_all_skips_empty"),
]

# Thirteenth round, a red team (tests/graders/bodies/red10.py): a receive buffer read
# through DLPack or its address, global settings (autocast, Python's and numpy's generators,
# a process-wide module hook), an alias made with _make_subclass, a bool tensor turned int64
# by a whole turn; and a halo exchanged once, three deep (scripts/halo_deep_once.py).
T10 = "red10:"
WRONG += [
    (test_waiting.test_safe_ring_shift, 2, T10 + "shift_read_via_dlpack",
     "its receive buffer was read (__dlpack__)"),
    (test_waiting.test_safe_ring_shift, 2, T10 + "shift_read_via_ctypes",
     "its receive buffer was read (data_ptr)"),
    (test_waiting.test_safe_ring_shift, 2, T10 + "shift_autocast_left_on", "(torch.autocast)"),
    (test_gradients.test_average_gradients_all_to_all, 2, T10 + "average_all_to_all_global_hook",
     "a global module hook"),
    (test_gradients.test_average_gradients_all_to_all, 2, T10 + "average_all_to_all_python_seed",
     "random (Python's generator)"),
    (test_waiting.test_overlapped_step, 2, T10 + "step_compute_first_make_subclass", PRIVATE),
    (test_batching.test_ring_shift, 2, T10 + "ring_shift_copy_plus_zero",
     "expected shape (6,) torch.bool"),
    (test_doctor.test_halo_exchange, 2, "scripts:halo_deep_once", "one edge value per message"),
]
RIGHT += [
    (test_waiting.test_safe_ring_shift, 4, T10 + "shift_loose_recv_first"),
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16", T10 + "fwd_exchange_flat"),
    (test_patterns.test_rotate_kv, 4, T10 + "rotate_kv_recv_first"),
    (test_patterns.test_rotate_kv, 3, T10 + "rotate_kv_synchronize"),
    (test_batching.test_ring_shift, 5, T10 + "ring_shift_recv_first"),
    (test_deadlocks.test_exchange_parity_ordered, 4, T10 + "parity_ordered_keywords"),
    (test_waiting.test_overlapped_step, 3, T10 + "step_einsum"),
    (test_algorithms.test_tree_broadcast, 6, T10 + "tree_broadcast_children_together"),
    (test_algorithms.test_tree_broadcast, 5, T10 + "tree_broadcast_recursive"),
]

# Fourteenth round, a red team (tests/graders/bodies/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
T11 = "red11_a:"
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, T11 + "shift_halves_as_float32",
     "never widened or narrowed"),
    (test_batching.test_exchange_with_neighbours, 3, T11 + "neighbours_widen_small_ints",
     "never widened or narrowed"),
    (test_snippets.test_fixed_average_gradients, 3, T11 + "fixed_average_half_grads_in_float32",
     "never widened or narrowed"),
    (test_waiting.test_overlapped_step, 2, T11 + "step_copy_weight_in_flight",
     "before computing block @ weight"),
    (test_doctor.test_halo_exchange, 4, "scripts:halo_float32_wire", "float64, as the cells are"),
]
RIGHT += [(test_algorithms.test_tree_broadcast, 6, T11 + "tree_broadcast_mpich_order")]

# Fifteenth round, a red team (tests/graders/bodies/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
T12A, T12B = "red12_a:", "red12_b:"
SHUFFLED = ("out of the tensor's order", "add up no rank's data", "other values than the method")
WRONG += [
    (test_ring.test_ring_all_reduce, 5, T12B + "ar_delta_encoded", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, T12B + "ar_flipped_wire", SHUFFLED),
    (test_ring.test_ring_reduce_scatter, 4, T12B + "rs_delta_encoded", SHUFFLED),
    (test_ring.test_pipelined_ring_all_reduce, 3, T12B + "pipelined_flipped_segments", SHUFFLED),
    (test_gradients.test_average_gradients_all_to_all, 3, T12B + "a2a_delta_encoded", SHUFFLED),
    (test_algorithms.test_recursive_doubling_all_reduce, 6, T12B + "rd_delta_encoded", SHUFFLED),
    (test_algorithms.test_halving_doubling_all_reduce, 4, T12B + "hd_flipped_allgather",
     SHUFFLED),
    (test_collectives.test_p2p_all_to_all, 3, T12B + "a2a_recv_sized_by_own_slot",
     ("killed by signal", "is wrong at flat index", "returned shape")),
    (test_collectives.test_p2p_broadcast, 5, T12B + "bcast_float64_narrowed",
     "never widened or narrowed"),
    (test_collectives.test_p2p_all_gather, 4, T12B + "all_gather_small_ints_widened",
     "never widened or narrowed"),
    (test_patterns.test_rotate_kv, 3, T12B + "rotate_kv_half_widened",
     "never widened or narrowed"),
    (test_deadlocks.test_exchange_batched, 2, T12A + "batched_nan_to_num",
     "is wrong at flat index"),
    (test_batching.test_ring_shift, 3, T12A + "ring_shift_clamps_infinities",
     "is wrong at flat index"),
    (test_p2p.test_pass_token, 3, T12A + "pass_token_adds_in_float32_except_int64",
     ("other values than the method sends", "is wrong at flat index")),
    (test_snippets.test_fixed_average_gradients, 3, T12A + "fixed_average_keeps_zero_grads",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, T12A + "fixed_average_bf16_through_half",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, T12A + "fixed_average_clamped",
     "is wrong at flat index"),
    (test_deadlocks.test_checked_exchange, 4, T12A + "checked_meta_without_ndim", CHECKED_LATE),
    (test_deadlocks.test_checked_exchange, 4, T12A + "checked_squeezes_leading_ones",
     "returned instead of raising"),
    (test_waiting.test_safe_ring_shift, 3, T12A + "shift_empty_shortcut_default_dtype",
     "returned shape"),
    (test_algorithms.test_tree_broadcast, 5, T12B + "tree_bcast_half_widened",
     "never widened or narrowed"),
]
# Round 13 (ours): averages whose precision depends on the values; the exactly summed
# gradients make every right order exact, so a narrower type anywhere is off by ulps
P13 = "red13_precision:"
EXACT_MEAN = "(expected the exact mean)"
WRONG += [
    (test_snippets.test_fixed_average_gradients, 3, T12A + "fixed_average_f16_summed_in_bf16",
     EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 2, P13 + "divided_in_bf16", EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 4, P13 + "others_summed_in_bf16", EXACT_MEAN),
    (test_snippets.test_fixed_average_gradients, 3, P13 + "f64_through_f32",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, P13 + "f32_sent_as_f16",
     "never widened or narrowed"),
]
# the weight's values taken out of the grader's sight, the product computed after the wait
E13 = "red13_escape:"
LATE = ") before computing block @ weight"
WRONG += [
    (test_waiting.test_overlapped_step, 3, T12A + "step_product_after_wait_via_item",
     "the weight left torch (item)"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_pickle", LATE),
    (test_waiting.test_overlapped_step, 2, E13 + "via_torch_save", "called torch.save()"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_data", LATE),
    (test_waiting.test_overlapped_step, 2, E13 + "via_deepcopy", "__deepcopy__"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_float", "the weight left torch"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_repr", "raised ValueError"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_bytes_of_view", "the weight left torch"),
    (test_waiting.test_overlapped_step, 2, E13 + "via_parameter", LATE),
]
# partial sums on the wire in another layout: a message keeps each gradient's order
L13 = "red13_layout:"
WRONG += [
    (test_ring.test_ring_all_reduce, 3, L13 + "ar_rotated_wire", SHUFFLED),
    (test_ring.test_ring_all_reduce, 4, L13 + "ar_interleaved_wire", SHUFFLED),
    (test_gradients.test_average_gradients_all_to_all, 3, L13 + "a2a_interleaved", SHUFFLED),
    # where every position does not fit the dtype, positions grow block by block
    (test_ring.test_ring_all_reduce, 3, L13 + "ar_delta_encoded_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, L13 + "ar_flipped_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, L13 + "ar_flipped_bf16", SHUFFLED),
]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3, L13 + "ring_avg_largest_first"),
    (test_gradients.test_average_gradients_all_to_all, 4, L13 + "a2a_reverse_order"),
]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, P13 + "accumulate_in_f32"),
    (test_snippets.test_fixed_average_gradients, 5, P13 + "divide_then_add"),
]
RIGHT += [
    (test_waiting.test_overlapped_step, 3, T12A + "step_scratch_then_copy"),
    (test_snippets.test_fixed_average_gradients, 3, T12A + "fixed_average_float64_accumulator"),
    (test_waiting.test_safe_ring_shift, 3, T12A + "shift_send_in_thread"),
    (test_p2p.test_ping_pong, 3, T12A + "ping_pong_one_buffer_cloned"),
    (test_p2p.test_ping_pong, 2, T12A + "ping_pong_replies_in_one_buffer"),
    (test_batching.test_all_pairs_exchange, 4, T12A + "all_pairs_rotated"),
    (test_ring.test_ring_all_reduce, 4, T12B + "ar_shifted_owner"),
    (test_ring.test_ring_all_reduce, 3, T12B + "ar_strided_chunks"),
    (test_ring.test_ring_all_reduce, 3, T12B + "ar_send_thread"),
    (test_ring.test_pipelined_ring_all_reduce, 5, T12B + "pipelined_balanced_segments"),
    (test_gradients.test_average_gradients_all_to_all, 5, T12B + "a2a_stack_sum"),
    (test_gradients.test_average_gradients_ring, 3, T12B + "ring_avg_grad_views"),
    (test_gradients.test_average_gradients_ring, 4, T12B + "ring_avg_divide_float64"),
]

# Lesson 12's script exercise, graded through the doctor: clean is not enough, the method is
# point to point, one edge value each way per neighbour per step.
WRONG += [
    (test_doctor.test_halo_exchange, 3, "scripts:halo_all_gather", "called all_gather"),
    (test_doctor.test_halo_exchange, 3, "scripts:halo_computed_locally", "sent to its neighbours"),
    (test_doctor.test_halo_exchange, 2, "scripts:halo_whole_tensors",
     ("sent to its neighbours", "one edge value per message")),
]
RIGHT += [(test_doctor.test_halo_exchange, 3, "scripts:halo_two_batches")]

GRADERS = list(dict.fromkeys((grader, arg) for grader, arg, *_ in WRONG + RIGHT))


def _id(case):
    return f"{case[0].__name__.removeprefix('test_')}-{case[2].split(':')[1]}-{case[1]}"


@pytest.mark.parametrize("grader, arg, body, message", WRONG, ids=map(_id, WRONG))
def test_a_wrong_body_fails_saying_why(grader, arg, body, message):
    started = time.perf_counter()
    messages = message if isinstance(message, tuple) else (message,)
    with pytest.raises(GradeFailure, match="|".join(map(re.escape, messages))):
        grader(f"{BODIES}.{body}", arg)
    if message == HUNG:     # a deadlock is reported within seconds, not minutes
        assert time.perf_counter() - started < 30


# Lesson 11's job runs under torchrun, outside the launcher, all bodies in one run.
JOB_WRONG = {
    # its sum through the process group's own method or a functional collective
    "unlisted6:ring_job_pg_allreduce": "the trace shows all_reduce",
    "unlisted6:ring_job_functional": "the trace shows all_reduce",
    # the total computed from the job's known inputs, a token passed around for show
    "red10:ring_job_formula": "the ring all-reduce sends 4 chunks",
    "red11_a:ring_job_star": "the ring sends only to rank",          # through rank 0
    "red11_a:ring_job_widened": "float32 as the tensor is",          # a float64 ring
    "red11_a:ring_job_torch_chunk": "ring_job(2, timeout_s=9)",      # fewer elements than ranks
    "red11_a:ring_job_unwaited": "never waited for",                 # isends never waited
}
JOB_RIGHT = ["red11_a:ring_job_device_backend",                       # "cpu:gloo"
             "red11_a:ring_job_barrier_before_leaving"]


def test_ring_job_grader_sees_every_door_and_the_ring(tmp_path):
    records = test_jobs.run_probe(tmp_path, *[f"{BODIES}.{b}" for b in [*JOB_WRONG, *JOB_RIGHT]])
    cases = {body: {rank: record[f"{BODIES}.{body}"] for rank, record in records.items()}
             for body in [*JOB_WRONG, *JOB_RIGHT]}
    for body, message in JOB_WRONG.items():
        with pytest.raises(GradeFailure, match=re.escape(message)):
            test_jobs.check_ring_job(cases[body])
    for body in JOB_RIGHT:
        test_jobs.check_ring_job(cases[body])


@pytest.mark.parametrize("grader, arg, body", RIGHT, ids=map(_id, RIGHT))
def test_a_correct_body_in_another_style_passes(grader, arg, body):
    grader(f"{BODIES}.{body}", arg)


@pytest.mark.parametrize("grader", sorted({g for g, _ in GRADERS}, key=lambda g: (g.__module__, g.__name__)),
                         ids=lambda g: g.__name__)
def test_every_grader_fails_on_its_stub(grader):
    """A function stub says it is not written yet; lesson 12's script, as shipped, is the
    buggy script the learner fixes: the doctor's problems are its grade."""
    arg = next(a for g, a in GRADERS if g is grader)
    if grader is test_doctor.test_halo_exchange:
        arg = 3                 # the shipped script's problems at 3 ranks: 6 (at 2: 5)
    expected = ("the doctor reports 6 problem(s)" if grader is test_doctor.test_halo_exchange
                else "is not implemented yet: write its body in labs/")
    with pytest.raises(GradeFailure, match=re.escape(expected)):
        grader("labs", arg)


def test_every_exercise_grader_is_tested_here():
    """A new grader test in one of these files gets a wrong and a right body above."""
    tested = {g for g, _ in GRADERS}
    for module in (test_algorithms, test_batching, test_collectives, test_deadlocks,
                   test_doctor, test_gradients, test_p2p, test_patterns, test_ring, test_waiting):
        found = {f for name, f in vars(module).items() if name.startswith("test_")}
        assert found <= tested, f"untested graders: {sorted(f.__name__ for f in found - tested)}"


# -- the checks and the grade sheet, on made-up results --------------------------------------

def _event(rank, op, seq, batch=None, peer=1, numel=4, dtype="float32", **kw):
    return Event(rank=rank, op=op, peer=peer, numel=numel, dtype=dtype, batch=batch, seq=seq,
                 blocking=op in ("send", "recv", "wait", "compute"), **kw)


def _op(kind, peer, seq, waited_at, api="batch_isend_irecv"):
    return Op(kind, kind, peer, 4, "float32", seq=seq, returned_work=True, waited=True,
              waited_at=waited_at, api=api)


def test_requests_are_waited_no_later_than_the_reference_waits_them():
    """Two ring steps, each waited whole before the next posts: a body that waits a step's
    send only at the end fails; blocking calls in the reference leave the body free."""
    ring = [_op("send", 1, 0, 2), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("recv", 2, 3, 4)]
    same = [_op("recv", 2, 0, 2), _op("send", 1, 1, 2), _op("recv", 2, 2, 4), _op("send", 1, 3, 4)]
    assert order_problems(same, ring, rank=0) == []
    late = [_op("send", 1, 0, 4), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("recv", 2, 3, 4)]
    assert "before waiting for a send of 4 x float32 to rank 1 (its 1st send" in \
        order_problems(late, ring, rank=0)[0]
    blocking = [_op("send", 1, 0, 1, api="send"), _op("recv", 2, 1, 2, api="recv")]
    overlapped = [_op("send", 1, 0, 2), _op("recv", 2, 1, 2)]
    assert order_problems(overlapped, blocking, rank=0) == []


def test_a_pipeline_forwards_each_segment_before_waiting_the_next():
    # reference: receives r0, r1 posted; wait r0 (at 2), send s0 (seq 2), wait r1 (at 3)...
    pipe = [_op("recv", 2, 0, 2), _op("recv", 2, 1, 3), _op("send", 1, 2, 4), _op("send", 1, 3, 4)]
    step = [_op("recv", 2, 0, 2), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("send", 1, 3, 4)]
    assert order_problems(pipe, pipe, rank=0, pipelined=True) == []
    assert "the pipeline forwards each segment" in \
        order_problems(step, pipe, rank=0, pipelined=True)[0]


def test_overlap_needs_post_then_compute_then_wait():
    post = [_event(0, "isend", 0, batch=0), _event(0, "irecv", 1, batch=0)]
    compute = _event(0, "compute", 2, label="mm")
    waits = [_event(0, "wait", 3, waits_for=0), _event(0, "wait", 4, waits_for=1)]
    check_overlap(post + [compute] + waits, "x", rank=0, label="mm", task="the product")
    early = _event(0, "compute", -1, label="mm")
    with pytest.raises(GradeFailure, match="computed the product before posting"):
        check_overlap([early] + post + waits, "x", rank=0, label="mm", task="the product")
    late = _event(0, "compute", 9, label="mm")
    with pytest.raises(GradeFailure, match=r"waited \(wait\(4 x float32\)\) before computing"):
        check_overlap(post + waits + [late], "x", rank=0, label="mm", task="the product")
    with pytest.raises(GradeFailure, match="never computed the product"):
        check_overlap(post + waits, "x", rank=0, label="mm", task="the product")


def test_messages_are_checked_for_dtype_size_and_total():
    sent = [_event(0, "isend", i, numel=n) for i, n in enumerate((3, 3, 2))]
    check_messages(sent, "x", rank=0, dtype="float32", largest=3, total=8, why="the ring")
    with pytest.raises(GradeFailure, match=r"sent 3 message\(s\), the largest 3 elements, 8 in "
                                           r"all; expected messages of at most 3 elements, at "
                                           r"most 6 in all: y"):
        check_messages(sent, "x", rank=0, dtype="float32", largest=3, total=6, why="y")
    with pytest.raises(GradeFailure, match=r"own dtype \(bfloat16\)"):
        check_messages(sent, "x", rank=0, dtype="bfloat16", largest=3, total=8, why="y")


def test_a_call_records_what_became_of_its_arguments():
    x = torch.zeros(2, 2)
    assert call(lambda t: t, x).returned_first and call(lambda t: t, x).aliased
    assert call(lambda t: t.clone(), x).aliased is False

    def fill(out, inputs):
        out.fill_(1.0)
        inputs[0] = torch.zeros(3)
        return out.view(-1)

    done = call(fill, x, [torch.ones(3), torch.ones(2)])
    assert (done.changed, done.names, done.aliased, done.replaced) == \
        ([0, 1], ["out", "inputs"], True, {1: [0]})
    x.zero_()
    assert torch.equal(done.result, torch.ones(4)), "the result is a copy taken on return"


@pytest.mark.parametrize("message, fragment", [
    ("rank 0 has (5,) float32 but peer 1 has (6,) float32", None),
    ("local torch.Size([2, 3])/torch.float32, remote torch.Size([3, 2])/torch.float32", None),
    ("shapes [5] vs [6], dtypes torch.float32 and torch.float32", None),
    ("shapes differ: 5 != 6 (float32)", None),
    ("mismatch with peer 1", "(5,) torch.float32 is missing"),
    ("rank 0 has (5,) float32, peer 1 another shape", "(6,) torch.float32 is missing"),
])
def test_checked_exchange_accepts_any_wording_that_names_both_sides(message, fragment):
    mine, theirs = torch.zeros(5), torch.zeros(6)
    if "[2, 3]" in message:
        mine, theirs = torch.zeros(2, 3), torch.zeros(3, 2)
    named = [test_deadlocks._names(message, t) for t in (mine, theirs)]
    assert all(named) == (fragment is None)




def test_your_labs_may_not_send_through_solutions_tests_or_the_engine():
    """Graded in labs/, no op may come from solutions/ or tests/ (the bodies here stand for
    a learner's code, so they may use copies of the references) or lesson 10's engine."""
    import os

    from labs.harness import COURSE_ROOT
    from labs.harness.grading.graded import _not_yours
    from solutions.ring import ring_all_reduce
    codes, prefixes = _not_yours("labs", ring_all_reduce)
    assert any(code is ring_all_reduce.__code__ for code in codes)
    for folder in ("solutions", os.path.join("tests", "graders", "bodies"),
                   os.path.join("tests", "harness"), os.path.join("labs", "views")):
        assert os.path.join(COURSE_ROOT, folder) + os.sep in prefixes
    # the graders may wrap what a body calls (to count a learner's ring_all_reduce calls)
    assert not any(os.path.join(COURSE_ROOT, "tests", "graders", "test_ring.py").startswith(p)
                   for p in prefixes)
    assert os.path.join(COURSE_ROOT, "labs", "plans.py") in prefixes
    assert not any(p.startswith(os.path.join(COURSE_ROOT, "tests"))
                   for p in _not_yours("tests.graders.bodies.ring", ring_all_reduce)[1])


def test_the_lessons_functions_a_body_may_not_call_are_all_listed():
    from labs.harness.grading import lessons
    assert lessons.scan() == lessons.LESSONS_FUNCTIONS, \
        "update LESSONS_FUNCTIONS in labs/harness/grading/lessons.py to what scan() finds"
