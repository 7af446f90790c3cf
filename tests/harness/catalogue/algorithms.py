"""Lesson `algorithms`'s learner bodies (tests/graders/bodies/algorithms/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_algorithms
from tests.harness.catalogue.messages import BORROWED, BUILTIN, MEMORY, SHUFFLED, SIZES, STEPS, SUMS

WRONG: list = []
RIGHT: list = []

# [lesson]
# Second round (tests/graders/bodies/<lesson>/unlisted2.py to unlisted7.py): other doors,
# data that must travel, world sizes beyond 4, large tensors, requests handed back, probes,
# refusals, roots, parameters.
# jobs/unlisted6.py: lesson 11's job, graded under torchrun (tests/harness/test_graders.py)
WRONG += [
    (test_algorithms.test_halving_doubling_all_reduce, 2,
     "algorithms.unlisted2:halving_falls_back_to_builtin",
     BUILTIN),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.unlisted3:tree_star",
     "a binomial tree needs"),
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.unlisted3:doubling_builtin_at_6",
     BUILTIN),
    (test_algorithms.test_halving_doubling_all_reduce, 4,
     "algorithms.unlisted3:halving_by_doubling",
     (*SIZES, STEPS)),
    (test_algorithms.test_tree_broadcast, 4, "algorithms.unlisted5:tree_chain",
     "a binomial tree needs"),
]

# [lesson]
# second round: tests/graders/bodies/<lesson>/others*.py
RIGHT += [
    (test_algorithms.test_tree_broadcast, 6, "algorithms.others2:tree_batched"),
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.others2:doubling_isend_irecv"),
    (test_algorithms.test_halving_doubling_all_reduce, 5,
     "algorithms.others2:halving_with_barrier"),
]

# [lesson]
# The course's own code communicating for the body: the reference, or lesson 10's engine.
WRONG += [
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.borrowed:doubling_calls_the_engine", BORROWED),
    (test_algorithms.test_halving_doubling_all_reduce, 5,
     "algorithms.borrowed:halving_calls_the_engine",
     BORROWED),
]

# [red teams]
# Third round (tests/graders/bodies/<lesson>/memory.py): the caller's memory, precision, a receive
# buffer used before its wait, extra or relayed messages, the method for small tensors only.
WRONG += [
    (test_algorithms.test_tree_broadcast, 5, "algorithms.memory:tree_into_new_memory", MEMORY),
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.memory:doubling_adds_in_float64",
     "is wrong at"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.memory:tree_star_for_small",
     "a binomial tree needs"),
]

# [red teams]
# Fifth round, a second red team (tests/graders/bodies/<lesson>_red2.py): results kept in two
# buffers used in turn (a later call overwrites them), a step's sends waited only at the
# end, a pipeline that forwards a whole step at a time; the product written other ways.
WRONG += [
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.red2:doubling_wide_accumulator", "every rank must end with the same bits"),
    (test_algorithms.test_tree_broadcast, 8, "algorithms.red2:tree_binary", "a binomial tree"),
]

# [red teams]
RIGHT += [
    (test_algorithms.test_halving_doubling_all_reduce, 7, "algorithms.red2:halving_swapped_halves"),
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red2:tree_isend_children"),
]

# [red teams]
# Sixth round, a third red team (tests/graders/bodies/<lesson>_red3.py): rank 1's replies made
# locally, a star one peer at a time, a root that is right only at the ends, bucket plans
# that close at DDP's first-bucket size or only above the cap, replicas that differ in their
# last bits; tags per round or per direction, sends waited at once in the pipeline.
WRONG += [
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.red3:doubling_others_buffer",
     "every rank must end with the same bits"),
]

# [red teams]
RIGHT += [
    (test_algorithms.test_recursive_doubling_all_reduce, 5,
     "algorithms.red3:doubling_parity_blocking"),
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red3:tree_far_child_first"),
    (test_algorithms.test_tree_broadcast, 7, "algorithms.red3:tree_mirrored"),
    (test_algorithms.test_halving_doubling_all_reduce, 6, "algorithms.red3:halving_others_kept"),
]

# [red teams]
RIGHT += [
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red5:tree_range_split"),
    (test_algorithms.test_recursive_doubling_all_reduce, 7, "algorithms.red5:doubling_own_fold"),
]

# [red teams]
# Ninth round, a sixth red team (tests/graders/bodies/<lesson>_red6.py): results kept from an
# earlier call while the communication still runs (the repeat's values are compared with
# the reference's: unchanged where the reference's changed is stale), a memo keyed on the
# argument object (odd ranks pass the same objects again), lent memory written by a torch op
# and put back, the weight's storage taken out of torch, `rounds=0`, a dtype the contract
# allows that `* 1` changes (bool), and barriers in a body facing the probes' stand-ins.
WRONG += [
    (test_algorithms.test_tree_broadcast, 7, "algorithms.red6:tree_any_source_recv",
     "every receive names its sender"),
]

# [red teams]
RIGHT += [
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red6:tree_scratch_then_copy"),
]

# [ours]
# Tenth round, ours (tests/graders/bodies/<lesson>/red7_sums.py): what travels in a reduction (the
# partial sums, compared on a probe where every rank's tensor holds 2**rank, which makes them
# exact in any order and names the ranks each adds up; a gradient average may divide first)
# and in a broadcast (each message holds
# the data every rank ends with): a negated, doubled or XOR-encoded wire fails; another cut
# of the tensor, another chunk ownership, or adding in float64 passes.
WRONG += [
    (test_algorithms.test_recursive_doubling_all_reduce, 5,
     "algorithms.red6:doubling_negated_wire", SUMS),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red7_sums:halving_scaled_wire",
     SUMS),
    (test_algorithms.test_tree_broadcast, 4, "algorithms.red7_sums:tree_bits_flipped",
     "holding other values than the tensor the broadcast delivers"),
    # a partner's data added where it lives, never sent back to it
    (test_algorithms.test_recursive_doubling_all_reduce, 4,
     "algorithms.red7_sums:doubling_combined_sent_back",
     SUMS),
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.red7_sums:doubling_combined_sent_back",
     SUMS),
]

# [ours]
RIGHT += [
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red7_sums:halving_larger_chunks_last"),
    # the order of partners is free: which sum goes to which peer, and with extra ranks
    # folded in, how many ranks each adds up
    (test_algorithms.test_halving_doubling_all_reduce, 6, "algorithms:halving_near_first"),
    (test_algorithms.test_recursive_doubling_all_reduce, 7, "algorithms:doubling_far_first"),
]

# [ours]
RIGHT += [
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red9_late:halving_gather_via_scratch"),
]

# [ours]
RIGHT += [
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red10:tree_broadcast_children_together"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red10:tree_broadcast_recursive"),
]

# [ours]
RIGHT += [
    (test_algorithms.test_tree_broadcast, 6, "algorithms.red11_a:tree_broadcast_mpich_order"),
]

# [ours]
# Fifteenth round, a red team (tests/graders/bodies/<lesson>/red12_a.py, red12_b.py): partial sums
# sent encoded (a chunk reversed, deltas from its first element), which a probe holding
# 2**rank everywhere cannot see (the positional probe of grading/sums.py does); dtypes the
# collectives and rotate_kv never ran; NaN and infinities "cleaned" on the way; int32 added
# through float32; an all_to_all whose receive sizes come from the wrong side.
WRONG += [
    (test_algorithms.test_recursive_doubling_all_reduce, 6, "algorithms.red12_b:rd_delta_encoded",
     SHUFFLED),
    (test_algorithms.test_halving_doubling_all_reduce, 4, "algorithms.red12_b:hd_flipped_allgather",
     SHUFFLED),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red12_b:tree_bcast_half_widened",
     "never widened or narrowed"),
]

# [ours]
# kinds no list named: requests waited before they are handed back, the largest subtree
# served last, a stage's send and receive in two batches
WRONG += [
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red14_probe:tree_children_descending",
     "a binomial tree needs ceil(log2 5) = 3"),
]

# [ours]
# correct bodies in styles from other sources, where the contract leaves the style free
RIGHT += [
    (test_algorithms.test_recursive_doubling_all_reduce, 6,
     "algorithms.red14_styles:doubling_blocking_pairs"),
    (test_algorithms.test_halving_doubling_all_reduce, 6,
     "algorithms.red14_styles:hd_fresh_buffers"),
    (test_algorithms.test_tree_broadcast, 5, "algorithms.red14_styles:tree_isend_children"),
]

# [ours]
# Round 15 (ours, tests/graders/bodies/<lesson>/red15_probe.py): the exercises the catalogue held least
# of, in kinds no list named: another algorithm (a chain, a two-way ring, a relay for small
# k), the caller's memory swapped out, sizes in a float of int64's width, one side's
# requests unwaited, the own slot the input itself, one batch per peer
WRONG += [
    (test_algorithms.test_halving_doubling_all_reduce, 4, "algorithms.red15_probe:hd_gather_whole",
     "no message holds more than"),
]

# [ours]
RIGHT += [
    (test_algorithms.test_halving_doubling_all_reduce, 7, "algorithms.red15_probe:hd_nearest_first"),
]
