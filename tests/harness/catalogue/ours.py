"""Rounds 10 to 15 and after: what travels in a reduction, precision, the partial sums'
layout, the weight out of sight, and lesson 12's script exercise through the doctor."""
from tests.graders import (test_algorithms, test_batching, test_collectives, test_deadlocks,
                           test_doctor, test_gradients, test_p2p, test_patterns, test_ring,
                           test_snippets, test_waiting)
from tests.harness.catalogue.messages import (HUNG, PARTNERS, CHECKED_LATE, KEPT, SUMS, ONLY,
                                              PRIVATE, SHUFFLED, EXACT_MEAN, LATE, UNWAITED,
                                              FRESH, ONE_BATCH)


WRONG: list = []
RIGHT: list = []

# Tenth round, ours (tests/graders/bodies/<lesson>/red7_sums.py): what travels in a reduction (the
# partial sums, compared on a probe where every rank's tensor holds 2**rank, which makes them
# exact in any order and names the ranks each adds up; a gradient average may divide first)
# and in a broadcast (each message holds
# the data every rank ends with): a negated, doubled or XOR-encoded wire fails; another cut
# of the tensor, another chunk ownership, or adding in float64 passes.
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red6:ring_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 3, "ring.red6:ring_xor_delta_wire", SUMS),
    (test_algorithms.test_recursive_doubling_all_reduce, 5,
     "algorithms.red6:doubling_negated_wire", SUMS),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red7_sums:rs_negated_wire", SUMS),
    (test_ring.test_ring_all_reduce, 4, "ring.red7_sums:ring_doubled_wire", SUMS),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red7_sums:pipelined_doubled_wire", SUMS),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red7_sums:halving_scaled_wire",
     SUMS),
    (test_algorithms.test_tree_broadcast, 4, "algorithms.red7_sums:tree_bits_flipped",
     "holding other values than the tensor the broadcast delivers"),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red7_sums:a2a_negated_wire",
     SUMS),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red7_sums:ring_avg_doubled_wire",
     SUMS),
    # a partner's data added where it lives, never sent back to it
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.red7_sums:doubling_combined_sent_back",
     SUMS),
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.red7_sums:doubling_combined_sent_back",
     SUMS),
]
RIGHT += [
    (test_ring.test_ring_all_reduce, 4, "ring.red7_sums:ring_other_owner"),
    (test_ring.test_ring_all_reduce, 5, "ring.red7_sums:ring_accumulates_in_float64"),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red7_sums:halving_larger_chunks_last"),
    (test_gradients.test_average_gradients_ring, 5, "gradients.red7_sums:ring_avg_predivided"),
    # the order of partners is free: which sum goes to which peer, and with extra ranks
    # folded in, how many ranks each adds up
    (test_algorithms.test_halving_doubling_all_reduce, 6, "algorithms:halving_near_first"),
    (test_algorithms.test_recursive_doubling_all_reduce, 7, "algorithms:doubling_far_first"),
]

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
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red8_gradients:fixed_average_relayed",
     "never sent anything to rank"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red8_gradients:fixed_average_doubled_wire",
     SUMS),
    # float16 gradients of 9 significant bits: bfloat16 (8) cannot add them up
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red6:a2a_halves_summed_in_bf16", "parameter 'fp16'"),
]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 4,
     "snippets.red8_gradients:fixed_average_peers_descending"),
]

# Twelfth round, a red team (tests/graders/bodies/<lesson>/red9_early.py, red9_late.py): torch's
# switches that take a call or a product out of the record's sight, or the grader patched
# (private.py); a send buffer written and put back in flight, a receive buffer read through
# numpy (the record); every shift, odd world sizes, zero-size tensors, 3-d shapes, more rounds
# than a pool of buffers; global settings, training flags; a bare assert (a clean message).
WRONG += [
    (test_waiting.test_overlapped_step, 2, "waiting.red9_early:step_hidden_product_first", PRIVATE),
    (test_waiting.test_overlapped_step, 3, "waiting.red9_early:step_hidden_product_after_wait",
     PRIVATE),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red9_early:average_hidden_all_reduce",
     PRIVATE),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red9_early:average_via_shared_file",
     PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_tampers_with_grader", PRIVATE),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_flips_send_in_flight",
     "its send buffer was written (neg_) before the send was waited"),
    (test_batching.test_exchange_with_neighbours, 3,
     "batching.red9_early:neighbours_flips_send_in_flight",
     "its send buffer was written"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red9_early:shift_reads_before_wait",
     "its receive buffer was read (numpy) before the receive was waited"),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red9_early:batched_reads_before_wait",
     "its receive buffer was read (numpy)"),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red9_early:average_reads_before_wait",
     "its receive buffer was read (numpy)"),
    (test_batching.test_ring_shift, 8, "batching.red9_early:ring_shift_relays_long_shifts",
     PARTNERS),
    (test_deadlocks.test_checked_exchange, 2, "deadlocks.red9_early:checked_partial_shape",
     "(2, 4, 3) float32: returned instead of raising ValueError"),
    (test_p2p.test_ping_pong, 2, "p2p.red9_early:ping_pong_pool_of_four", "the same memory twice"),
    (test_waiting.test_safe_ring_shift, 4, "waiting.red9_early:shift_empty_shortcut",
     "expected shape (0, 2)"),
    (test_deadlocks.test_exchange_batched, 3,
     "deadlocks.red9_early:batched_head_to_head_at_odd_world",
     HUNG),
    (test_gradients.test_average_gradients_all_to_all, 3,
     "gradients.red9_late:a2a_sets_deterministic",
     "left torch's global settings changed (torch.use_deterministic_algorithms)"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red9_late:ring_avg_unfreezes",
     "a parameter's requires_grad"),
    (test_ring.test_ring_all_reduce, 2, "ring.red9_late:ring_bare_assert",
     "raised AssertionError: (no message)"),
    # a cache for large tensors only: the call-again probe runs on the largest cases too
    (test_ring.test_ring_all_reduce, 3, "ring.red9_late:ring_memo_large", "the same values when"),
    # two receives in flight once, then one segment at a time
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red9_late:pipelined_prefetch_once",
     "with no receive posted for the next one"),
]
RIGHT += [
    (test_batching.test_all_pairs_exchange, 3, "batching.red9_early:all_pairs_zero_dim_lengths"),
    (test_batching.test_all_pairs_exchange, 4,
     "batching.red9_early:all_pairs_lengths_in_one_tensor"),
    (test_waiting.test_overlapped_step, 3, "waiting.red9_early:step_tensordot"),
    (test_waiting.test_overlapped_step, 2, "waiting.red9_early:step_product_in_thread"),
    (test_p2p.test_ping_pong, 3, "p2p.red9_early:ping_pong_rank1_preposts"),
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red9_early:average_into_flat_views"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red9_early:average_waits_receives_then_sends"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red9_early:checked_equal_meta"),
    (test_ring.test_ring_all_reduce, 7, "ring.red9_late:ring_strided_chunks"),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red9_late:halving_gather_via_scratch"),
    (test_collectives.test_p2p_all_gather, 4, "collectives.red9_late:all_gather_sends_input_first"),
    (test_collectives.test_p2p_all_to_all, 8, "collectives.red9_late:all_to_all_skips_empty"),
]

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
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red10:average_all_to_all_global_hook",
     "a global module hook"),
    (test_gradients.test_average_gradients_all_to_all, 2,
     "gradients.red10:average_all_to_all_python_seed",
     "random (Python's generator)"),
    (test_waiting.test_overlapped_step, 2, "waiting.red10:step_compute_first_make_subclass",
     PRIVATE),
    (test_batching.test_ring_shift, 2, "batching.red10:ring_shift_copy_plus_zero",
     "expected shape (6,) torch.bool"),
    (test_doctor.test_halo_exchange, 2, "scripts:halo_deep_once", "one edge value per message"),
]
RIGHT += [
    (test_waiting.test_safe_ring_shift, 4, "waiting.red10:shift_loose_recv_first"),
    (test_patterns.test_neighbour_exchange_head_to_head, "bfloat16",
     "patterns.red10:fwd_exchange_flat"),
    (test_patterns.test_rotate_kv, 4, "patterns.red10:rotate_kv_recv_first"),
    (test_patterns.test_rotate_kv, 3, "patterns.red10:rotate_kv_synchronize"),
    (test_batching.test_ring_shift, 5, "batching.red10:ring_shift_recv_first"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.red10:parity_ordered_keywords"),
    (test_waiting.test_overlapped_step, 3, "waiting.red10:step_einsum"),
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red10:tree_broadcast_children_together"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red10:tree_broadcast_recursive"),
]

# Fourteenth round, a red team (tests/graders/bodies/<lesson>/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
WRONG += [
    (test_waiting.test_safe_ring_shift, 3, "waiting.red11_a:shift_halves_as_float32",
     "never widened or narrowed"),
    (test_batching.test_exchange_with_neighbours, 3, "batching.red11_a:neighbours_widen_small_ints",
     "never widened or narrowed"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red11_a:fixed_average_half_grads_in_float32",
     "never widened or narrowed"),
    (test_waiting.test_overlapped_step, 2, "waiting.red11_a:step_copy_weight_in_flight",
     "before computing block @ weight"),
    (test_doctor.test_halo_exchange, 4, "scripts:halo_float32_wire", "float64, as the cells are"),
]
RIGHT += [(test_algorithms.test_tree_broadcast, 6, "algorithms.red11_a:tree_broadcast_mpich_order")]

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
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red12_b:a2a_delta_encoded",
     SHUFFLED),
    (test_algorithms.test_recursive_doubling_all_reduce, 6, "algorithms.red12_b:rd_delta_encoded",
     SHUFFLED),
    (test_algorithms.test_halving_doubling_all_reduce, 4, "algorithms.red12_b:hd_flipped_allgather",
     SHUFFLED),
    (test_collectives.test_p2p_all_to_all, 3, "collectives.red12_b:a2a_recv_sized_by_own_slot",
     ("killed by signal", "larger than its buffer", "is wrong at flat index",
      "returned shape")),
    (test_collectives.test_p2p_broadcast, 5, "collectives.red12_b:bcast_float64_narrowed",
     "never widened or narrowed"),
    (test_collectives.test_p2p_all_gather, 4, "collectives.red12_b:all_gather_small_ints_widened",
     "never widened or narrowed"),
    (test_patterns.test_rotate_kv, 3, "patterns.red12_b:rotate_kv_half_widened",
     "never widened or narrowed"),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red12_a:batched_nan_to_num",
     "is wrong at flat index"),
    (test_batching.test_ring_shift, 3, "batching.red12_a:ring_shift_clamps_infinities",
     "is wrong at flat index"),
    (test_p2p.test_pass_token, 3, "p2p.red12_a:pass_token_adds_in_float32_except_int64",
     ("other values than the method sends", "is wrong at flat index")),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red12_a:fixed_average_keeps_zero_grads",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2,
     "snippets.red12_a:fixed_average_bf16_through_half",
     "is wrong at flat index"),
    (test_snippets.test_fixed_average_gradients, 2, "snippets.red12_a:fixed_average_clamped",
     "is wrong at flat index"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red12_a:checked_meta_without_ndim",
     CHECKED_LATE),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red12_a:checked_squeezes_leading_ones",
     "returned instead of raising"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red12_a:shift_empty_shortcut_default_dtype",
     "returned shape"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red12_b:tree_bcast_half_widened",
     "never widened or narrowed"),
]
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
# partial sums on the wire in another layout: a message keeps each gradient's order
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_rotated_wire", SHUFFLED),
    (test_ring.test_ring_all_reduce, 4, "ring.red13_layout:ar_interleaved_wire", SHUFFLED),
    (test_gradients.test_average_gradients_all_to_all, 3, "gradients.red13_layout:a2a_interleaved",
     SHUFFLED),
    # where every position does not fit the dtype, positions grow block by block
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_delta_encoded_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_flipped_when_large", SHUFFLED),
    (test_ring.test_ring_all_reduce, 3, "ring.red13_layout:ar_flipped_bf16", SHUFFLED),
]
RIGHT += [
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red13_layout:ring_avg_largest_first"),
    (test_gradients.test_average_gradients_all_to_all, 4,
     "gradients.red13_layout:a2a_reverse_order"),
]
RIGHT += [
    (test_snippets.test_fixed_average_gradients, 3, "snippets.red13_precision:accumulate_in_f32"),
    (test_snippets.test_fixed_average_gradients, 5, "snippets.red13_precision:divide_then_add"),
]
RIGHT += [
    (test_waiting.test_overlapped_step, 3, "waiting.red12_a:step_scratch_then_copy"),
    (test_snippets.test_fixed_average_gradients, 3,
     "snippets.red12_a:fixed_average_float64_accumulator"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red12_a:shift_send_in_thread"),
    (test_p2p.test_ping_pong, 3, "p2p.red12_a:ping_pong_one_buffer_cloned"),
    (test_p2p.test_ping_pong, 2, "p2p.red12_a:ping_pong_replies_in_one_buffer"),
    (test_batching.test_all_pairs_exchange, 4, "batching.red12_a:all_pairs_rotated"),
    (test_ring.test_ring_all_reduce, 4, "ring.red12_b:ar_shifted_owner"),
    (test_ring.test_ring_all_reduce, 3, "ring.red12_b:ar_strided_chunks"),
    (test_ring.test_ring_all_reduce, 3, "ring.red12_b:ar_send_thread"),
    (test_ring.test_pipelined_ring_all_reduce, 5, "ring.red12_b:pipelined_balanced_segments"),
    (test_gradients.test_average_gradients_all_to_all, 5, "gradients.red12_b:a2a_stack_sum"),
    (test_gradients.test_average_gradients_ring, 3, "gradients.red12_b:ring_avg_grad_views"),
    (test_gradients.test_average_gradients_ring, 4, "gradients.red12_b:ring_avg_divide_float64"),
]

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
RIGHT += [(test_snippets.test_fixed_average_gradients, 3, "snippets.red14_more:avg_kept_receive_buffers")]
# kinds no list named: requests waited before they are handed back, the largest subtree
# served last, a stage's send and receive in two batches
WRONG += [
    (test_patterns.test_rotate_kv, 3, "patterns.red14_probe:rotate_kv_waited_inside",
     "hand back every request"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red14_probe:tree_children_descending",
     "a binomial tree needs ceil(log2 5) = 3"),
    (test_patterns.test_neighbour_exchange_head_to_head, "float32",
     "patterns.red14_probe:send_forward_two_batches", HUNG),
]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_ring.test_ring_all_reduce, 7, "ring.red14_styles:ar_isend_irecv"),
    (test_ring.test_ring_reduce_scatter, 4, "ring.red14_styles:rs_narrow"),
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.red14_styles:doubling_blocking_pairs"),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red14_styles:hd_fresh_buffers"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red14_styles:tree_isend_children"),
    (test_gradients.test_average_gradients_ring, 3,
     "gradients.red14_styles:ring_avg_flatten_dense"),
    (test_p2p.test_ping_pong, 3, "p2p.red14_styles:ping_pong_isend_irecv"),
    (test_p2p.test_pass_token, 4, "p2p.red14_styles:pass_token_tagged"),
    (test_waiting.test_safe_ring_shift, 3, "waiting.red14_styles:shift_recv_first"),
    (test_patterns.test_rotate_kv, 3, "patterns.red14_styles:rotate_kv_loop"),
]

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
    (test_batching.test_all_pairs_exchange, 3, "batching.red15_probe:all_pairs_sizes_float64",
     "never widened"),
    (test_batching.test_exchange_with_neighbours, 2, "batching.red15_probe:neighbours_once_for_two",
     "the method sends 2"),
    (test_batching.test_ring_shift, 5, "batching.red15_probe:shift_relayed_for_small_k",
     "not relayed"),
    (test_deadlocks.test_exchange_parity_ordered, 4, "deadlocks.red15_probe:parity_by_lower_rank",
     "recv first in every exchange"),
    (test_deadlocks.test_exchange_parity_ordered, 4,
     "deadlocks.red15_probe:parity_isend_waited_late",
     "expected blocking dist.send/dist.recv"),
    (test_algorithms.test_halving_doubling_all_reduce, 4, "algorithms.red15_probe:hd_gather_whole",
     "no message holds more than"),
]
RIGHT += [(test_algorithms.test_halving_doubling_all_reduce, 7, "algorithms.red15_probe:hd_nearest_first")]
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
    (test_patterns.test_rotate_kv, 3, "patterns.red15_more:rotate_kv_one_message",
     "the method sends 2"),
    (test_deadlocks.test_checked_exchange, 4, "deadlocks.red15_more:checked_numel_only",
     "returned instead of raising ValueError"),
]
WRONG += [
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red15:pipelined_segment_as_float32",
     "no message holds more than"),
    (test_ring.test_pipelined_ring_all_reduce, 3, "ring.red15:pipelined_chunk_at_a_time",
     "the pipeline forwards each segment as soon as it is reduced"),
    (test_ring.test_ring_reduce_scatter, 3, "ring.red15:rs_returns_copy", "must return the view"),
]
RIGHT += [(test_ring.test_ring_reduce_scatter, 4, "ring.red15:rs_receive_into_chunk")]
# right on a launch's first calls, wrong after a few: every call is graded, not the first
WRONG += [
    (test_ring.test_ring_all_reduce, 3, "ring.red15_late:ar_builtin_after_five",
     "called all_reduce"),
    (test_deadlocks.test_exchange_batched, 2, "deadlocks.red15_late:batched_stops_waiting_sends",
     UNWAITED),
]
RIGHT += [(test_gradients.test_average_gradients_all_to_all, 3, "gradients.red15_more:a2a_assigns_new_grad"),
          (test_patterns.test_rotate_kv, 3, "patterns.red15_more:rotate_kv_sends_copies"),
          (test_deadlocks.test_checked_exchange, 4, "deadlocks.red15_more:checked_meta_by_parity")]

# Lesson 12's script exercise, graded through the doctor: clean is not enough, the method is
# point to point, one edge value each way per neighbour per step.
WRONG += [
    (test_doctor.test_halo_exchange, 3, "scripts:halo_all_gather", "called all_gather"),
    (test_doctor.test_halo_exchange, 3, "scripts:halo_computed_locally", "sent to its neighbours"),
    (test_doctor.test_halo_exchange, 2, "scripts:halo_whole_tensors",
     ("sent to its neighbours", "one edge value per message")),
]
RIGHT += [(test_doctor.test_halo_exchange, 3, "scripts:halo_two_batches")]

# ping_pong's clock, after its check changed (each round holds the partner's pause and the
# span the record saw): five more wrong clocks, each with the right replies.
WRONG += [(test_p2p.test_ping_pong, 2, "p2p.red16_clocks:" + name, "time each round on its own")
          for name in ("pp_clock_around_recv_only", "pp_one_way_latency", "pp_milliseconds",
                       "pp_cumulative", "pp_previous_round")]
