"""Lesson 02's claims: what P2POp and batch_isend_irecv check, what a batch is on gloo,
ordering, FIFO, tags, and peer vs group_peer. Workers come from labs.batching."""
import re

import labs.batching as lesson
from labs import launch
from labs.claims.common import Ended, attempt, once
from labs.claims.registry import ClaimResult, claim


def lesson02_demos(rank, world_size):
    """Lesson 02's demos one after the other, on the same two ranks."""
    lesson.anatomy(rank, world_size)
    return {"errors": lesson.validation_errors(rank, world_size),
            "ungrouped": lesson.ungrouped_exchange(rank, world_size),
            "received": lesson.batch_on_gloo(rank, world_size),
            "order": [lesson.order_inside_batch(rank, world_size, first).tolist()
                      for first in ((), (1,), (0, 1))],
            "fifo": lesson.fifo_same_pair(rank, world_size),
            "tags": lesson.tags_out_of_order(rank, world_size)}


@once
def _demos():
    return launch(lesson02_demos, 2, quiet=True)


def _error(mistake):
    """The error rank 0 got for one of lesson.validation_errors' mistakes."""
    return _demos()[0]["errors"][mistake]


def _raised(mistake, prefix):
    error = _error(mistake)
    return ClaimResult(error.startswith(prefix), error)


@claim("02", "P2POp accepts only dist.isend or dist.irecv as its op (ValueError otherwise)")
def p2pop_rejects_other_ops():
    return _raised("op=dist.send (not isend/irecv)", "ValueError: Invalid ``op``")


@claim("02", "P2POp takes peer or group_peer, not both (ValueError)")
def p2pop_rejects_peer_and_group_peer():
    return _raised("both peer and group_peer", "ValueError")


@claim("02", "batch_isend_irecv wants a list: a tuple of ops is a ValueError")
def batch_rejects_a_tuple():
    return _raised("a tuple of ops", "ValueError: Invalid ``p2p_op_list``")


@claim("02", "batch_isend_irecv([]) raises a bare IndexError")
def empty_batch_raises_index_error():
    return _raised("an empty list", "IndexError")


@claim("02", "the ops of one batch must share one group (ValueError)")
def batch_rejects_two_groups():
    return _raised("ops on two groups", "ValueError: All ops need to use the same group")


@claim("02", "a negative tag is rejected when the op is posted (RuntimeError)")
def negative_tag_rejected():
    return _raised("a negative tag (checked when posted)", "RuntimeError: Tag must be nonnegative")


@claim("02", "the default group's P2POp does not range-check peer: peer=99 builds in a group of 2")
def peer_not_range_checked_when_built():
    built = re.search(r"built with peer=99 in a group of 2: .*peer=99", _demos().outputs[0])
    return ClaimResult(built is not None, f"P2POp(isend, t, peer=99) built: {built is not None}")


@claim("02", "posting an isend to a rank that does not exist never succeeds (undefined "
             "behaviour: how it fails is not specified)")
def posting_to_a_missing_peer_fails():
    outcome = attempt(lesson.unchecked_peer, 2, timeout=2)
    return ClaimResult(outcome.kind != "returned",
                       "it returned" if outcome.kind == "returned" else "it did not succeed")


@claim("02", "on gloo two ranks that each isend to the other, then irecv, without a batch, "
             "complete the exchange (isend only posts)")
def ungrouped_isend_irecv_completes_on_gloo():
    got = [r["ungrouped"] for r in _demos()]
    holds = got == [[20.0] * 3, [10.0] * 3]
    return ClaimResult(holds, f"isend then irecv on both ranks, no batch: rank 0 got {got[0]}, "
                              f"rank 1 got {got[1]}")


@claim("02", "on gloo batch_isend_irecv returns one Work per op (supports_coalescing is False)")
def one_work_per_op_on_gloo():
    printed = _demos().outputs[0]
    counts = re.search(r"(\d+) ops -> (\d+) Work objects", printed)
    coalescing = re.search(r"supports_coalescing: (\w+)", printed)
    ops, works = counts.groups() if counts else ("?", "?")
    flag = coalescing.group(1) if coalescing else "?"
    return ClaimResult(ops == works == "4" and flag == "False",
                       f"{ops} ops -> {works} Work objects; supports_coalescing: {flag}")


@claim("02", "the order of sends and receives inside one batch does not matter")
def order_inside_batch_does_not_matter():
    sender, receiver = (r["order"] for r in _demos())
    holds = sender == [[20.0] * 3] * 3 and receiver == [[10.0] * 3] * 3
    return ClaimResult(holds, f"send first on both, recv first on rank 1, recv first on both: "
                              f"every exchange completed with the peer's data: {holds}")


@claim("02", "repeated ops between the same pair and direction match in FIFO order")
def fifo_per_pair():
    line = re.search(r"\('b', 'a'\): (a = \[[^\]]*\], b = \[[^\]]*\])", _demos().outputs[1])
    seen = line.group(1) if line else "(not printed)"
    return ClaimResult(seen == "a = [2.0, 2.0, 2.0], b = [1.0, 1.0, 1.0]",
                       f"A=1 then B=2 sent; irecvs posted into b, then a: {seen}")


@claim("02", "gloo honours tags: messages with different tags can be received out of order")
def tags_received_out_of_order():
    printed = _demos().outputs[1]
    both = printed.count("tag 2 got [2.0, 2.0, 2.0], tag 1 got [1.0, 1.0, 1.0]")
    return ClaimResult(both == 2, f"tag 1 sent first, tag 2 received first, blocking and "
                                  f"batched: {both} of 2 got the right message")


@once
def _subgroups():
    return launch(lesson.subgroup_peers, 4, quiet=True)


@claim("02", "with a subgroup, peer is a global rank and group_peer the rank inside the group")
def peer_is_global_group_peer_is_local():
    results = _subgroups()
    printed = results.outputs[0]
    by_peer = re.search(r"isend, peer=2, group=g\)\s*-> peer=2, group_peer=(\d+)", printed)
    by_group_peer = re.search(r"irecv, group=g, group_peer=1\) -> peer=(\d+)", printed)
    group_peer = by_peer.group(1) if by_peer else "?"
    peer = by_group_peer.group(1) if by_group_peer else "?"
    holds = (group_peer, peer) == ("1", "2") and list(results) == [2.0, 3.0, 0.0, 1.0]
    return ClaimResult(holds, f"group [0, 2], rank 0's partner: peer=2 -> group_peer="
                              f"{group_peer}, group_peer=1 -> peer={peer}; received "
                              f"{list(results)}")


@claim("02", "with a subgroup, P2POp rejects a peer that is not a member (ValueError)")
def subgroup_peer_must_be_a_member():
    printed = _subgroups().outputs[0]
    rejected = "Global rank 1 is not part of group" in printed
    return ClaimResult(rejected, f"P2POp(isend, peer=1, group=[0, 2]) on rank 0 raised "
                                 f"ValueError 'Global rank 1 is not part of group': {rejected}")


@claim("02", "an asymmetric batch on gloo (rank 0: isend + irecv, rank 1: irecv only): the matched "
             "send and receive complete, rank 0 waits on its unmatched receive until the timeout")
def asymmetric_batch_matched_half_completes():
    outcome = attempt(lesson.asymmetric_batch, 2, timeout=10, pg_timeout=1.5)
    printed = outcome.error.outputs.get(1, "") if outcome.error is not None else ""
    received = "received [7.0, 7.0, 7.0]" in printed
    holds = (outcome.kind == Ended.HANG and received and "rank 1" not in outcome.brief
             and "rank 0: blocked in wait() on irecv(from 1" in outcome.brief)
    return ClaimResult(holds, f"rank 1 received its data: {received}; {outcome.kind}: "
                              f"{outcome.brief.split('; posted')[0]}")
