"""Lesson 03's claims (wait() vs barrier, which Work guards which buffer, the same-tensor
race, waiting twice) and lesson 08's dropped requests (a receive, a send). Workers come
from labs.waiting and labs.snippets."""
import re

import labs.snippets as snippets
import labs.waiting as lesson
from labs import launch
from labs.claims.common import HANG, Ended, attempt
from labs.claims.registry import ClaimResult, claim


@claim("03", "a barrier does not complete point-to-point work: only wait() does")
def barrier_does_not_complete_p2p():
    results = launch(lesson.barrier_is_not_wait, 2, quiet=True)
    first = lesson.barriers_returned_first(results.trace)
    after_wait = [r[1] for r in results]
    received = [r[2] for r in results] == [1.0, 0.0]
    return ClaimResult(first and after_wait == [True, True] and received,
                       f"each rank's barrier returned before the receive matching its isend "
                       f"was posted: {first}; after wait(): is_completed() {after_wait}, each "
                       f"rank got its neighbour's value: {received}")


@claim("03", "each Work of a gloo batch guards its own buffer: waiting for the receive "
             "does not complete the send")
def recv_wait_does_not_cover_send():
    got = launch(lesson.reuse_after_recv_wait, 2, quiet=True)[1]
    return ClaimResult(got == [-7.0] * 4, f"rank 0 waited for its irecv only, then "
                                          f"overwrote its send buffer with -7: rank 1 got {got}")


@claim("03", "sending and receiving the same tensor is a race: a receive that lands first "
             "is what the send carries on")
def same_tensor_send_recv_is_a_race():
    got = list(launch(lesson.racy_ring_shift, 3, args=(2,), quiet=True))
    # Ranks 1 and 2 are certain; rank 0 ends with 3.0 or 1.0: rank 2's own send and receive
    # race the same way, and which lands first differs from run to run.
    return ClaimResult(got[1:] == [1.0, 1.0] and got[0] in (1.0, 3.0),
                       f"ranks hold 1, 2, 3; with rank 2 late, ranks 1 and 2 were left with "
                       f"{got[1:]} (a correct shift: [1.0, 2.0])")


@claim("03", "on gloo a second wait() on the same Work blocks until the timeout")
def double_wait_blocks_until_timeout():
    seen = launch(lesson.wait_twice, 2, timeout=10, pg_timeout=5, quiet=True)[1]
    second = seen[2] if len(seen) > 2 else "(no second wait)"
    holds = seen[0] == "first wait returned" and second.startswith(
        "second wait: Timed out waiting 1000ms")
    return ClaimResult(holds, second)


@claim("08", "on gloo a receive whose request is dropped before its data arrives is "
             "abandoned: its buffer is never written and the next collective hangs")
def dropped_recv_request_is_abandoned():
    outcome = attempt(snippets.dropped_request, 2, args=(False, True), **HANG)
    printed = outcome.error.outputs.get(0, "") if outcome.error is not None else ""
    buffer = re.search(r"buffer after rank 1's send completed: (\[[^\]]*\])", printed)
    seen = buffer.group(1) if buffer else "(not printed)"
    holds = outcome.kind == Ended.HANG and seen == "[0.0, 0.0, 0.0]"
    return ClaimResult(holds, f"rank 0's buffer after rank 1's send completed: {seen}; "
                              f"the barrier that follows: {outcome.kind}")


@claim("08", "on gloo a send whose request is dropped before the receiver is ready is "
             "abandoned: the receiver waits for it forever")
def dropped_send_request_is_abandoned():
    outcome = attempt(snippets.dropped_send, 2, **HANG)
    status = outcome.error.statuses.get(1) if outcome.kind == Ended.HANG else None
    blocked = status.blocked_in.describe() if status and status.blocked_in else "(not blocked)"
    holds = outcome.kind == Ended.HANG and blocked.startswith("wait() on irecv(from 0")
    return ClaimResult(holds, f"rank 0 dropped its isend before rank 1 posted the receive; "
                              f"rank 1: {outcome.kind}, blocked in {blocked}")
