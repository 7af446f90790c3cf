"""Each exercise's method: its reference solution (solutions/<module>.py, same name) and what
the comparison leaves free. One entry per exercise; the graders look it up by name.
`contents=True` where the contract fixes what travels: the data itself, never partial sums
(their rounding depends on the order of the additions, which the method leaves free);
`sums` where partial sums travel: they are compared on a probe that makes them exact."""
from labs.harness.grading.compare import Method

RING = "in the ring, rank {rank} sends only to rank {next} and receives only from rank {prev}"
_PER_PEER = "every gradient to every other rank, and each of theirs received"
_PAIR = "one send to the peer and one receive from it"

METHODS = {
    "p2p.ping_pong": Method("ranks 0 and 1 bounce the tensor, one send and one receive per "
                            "round each way", contents=True, any_source=True),
    "p2p.pass_token": Method("the token travels once around the ring 0 -> 1 -> ... -> 0: "
                             "rank {rank} receives from rank {prev} and sends to rank {next}",
                             contents=True, any_source=True),
    "batching.exchange_with_neighbours": Method("rank {rank} sends its tensor to both "
                                                "neighbours and receives one from each",
                                                contents=True),
    "batching.ring_shift": Method("one message straight to rank + k, one from rank - k, "
                                  "not relayed through the ranks between", contents=True),
    "batching.all_pairs_exchange": Method("to every other rank: its length first, then the "
                                          "chunk, in the chunk's own dtype", contents=True),
    "waiting.safe_ring_shift": Method(RING, contents=True),
    "waiting.overlapped_step": Method(RING, writes=(2,), contents=True),
    "deadlocks.exchange_batched": Method(_PAIR, contents=True),
    "deadlocks.exchange_parity_ordered": Method(_PAIR, contents=True),
    "deadlocks.checked_exchange": Method("the fixed-size metadata (encode_meta) first, then "
                                         "the tensor, each way", contents=True),
    "ring.ring_reduce_scatter": Method(RING + ", one chunk per step", writes=(0,),
                                       returns="view", sums="sum"),
    "ring.ring_all_reduce": Method(RING + ", one chunk per step", writes=(0,), returns="input",
                                   compare="counts", sums="sum"),
    "ring.pipelined_ring_all_reduce": Method(RING + ", one segment per message", writes=(0,),
                                             returns="input", compare="counts",
                                             pipelined=True, sums="sum"),
    "gradients.average_gradients_all_to_all": Method(_PER_PEER, writes=(0,),
                                                     returns="nothing", compare="volume",
                                                     sums="mean"),
    "gradients.average_gradients_ring": Method(RING + ", one ring all-reduce per dtype",
                                               writes=(0,), returns="nothing", compare="counts",
                                               sums="mean"),
    "gradients.average_gradients_bucketed": Method(RING + ", one ring all-reduce per bucket "
                                                   "of plan_buckets", writes=(0,),
                                                   returns="nothing", compare="counts",
                                                   sums="mean"),
    "collectives.p2p_broadcast": Method("the star: src sends the tensor once to every other "
                                        "rank, each of them receives it once, from src only",
                                        writes=(0,), returns="input", contents=True),
    "collectives.p2p_gather": Method("the star: every other rank sends its tensor once, "
                                     "straight to dst; dst receives once from each", contents=True),
    "collectives.p2p_all_gather": Method(RING + ", one rank's tensor per step", contents=True),
    "collectives.p2p_all_to_all": Method("one message to and one from every other rank",
                                         writes=(0,), returns="input", contents=True),
    "snippets.fixed_average_gradients": Method(_PER_PEER, writes=(0,), returns="nothing",
                                               compare="volume", sums="mean"),
    "patterns.send_forward_recv_backward": Method("one send to and one receive from the "
                                                  "next stage", contents=True),
    "patterns.send_backward_recv_forward": Method("one send to and one receive from the "
                                                  "previous stage", contents=True),
    "patterns.rotate_kv": Method(RING + ": k and v each way", returns_requests=True,
                                 ordered=False, contents=True),
    "algorithms.tree_broadcast": Method("the binomial tree: rank {rank} receives once from "
                                        "its parent, then sends to its children",
                                        writes=(0,), returns="input", compare="routing",
                                        relays=True),
    "algorithms.recursive_doubling_all_reduce": Method(
        "recursive doubling: whole tensors with partner rank ^ 2^k, extra ranks folded in "
        "and out", writes=(0,), returns="input", sums="subsets"),
    "algorithms.halving_doubling_all_reduce": Method(
        "recursive halving then doubling: half the remaining data with partner rank ^ 2^k "
        "each step, extra ranks folded in and out", writes=(0,), returns="input",
        compare="counts", sums="subsets"),
    "layouts.pp_dp_step": Method("stage s exchanges only with stages s - 1 and s + 1 of its own "
                                 "pipeline group, one message per batch; each gradient is "
                                 "averaged over its data-parallel group only", writes=(0,),
                                 returns="fresh"),
}
