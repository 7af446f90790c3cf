"""Lesson 01's claims: gloo's send is a rendezvous, when a Work says it is done, who owns
a buffer, and receiving from any source. Workers come from labs.p2p where it has one."""
import re

import labs.p2p as lesson
from labs import launch
from labs.claims.common import once
from labs.claims.registry import ClaimResult, claim


@claim("01", "on gloo a blocking send returns only after the receiver has posted its recv")
def send_is_a_rendezvous():
    trace = launch(lesson.rendezvous_send, 2, args=(0.3,), quiet=True).trace
    send = next(e for e in trace if e.rank == 0 and e.op == "send")
    recv = next(e for e in trace if e.rank == 1 and e.op == "recv")
    after = send.t_done >= recv.t_post          # one clock for both ranks (perf_counter)
    return ClaimResult(after, f"receiver slept 0.3 s before its recv; "
                              f"the send returned after the recv was posted: {after}")


@claim("01", "a gloo point-to-point Work reports is_completed() == False until wait(), "
             "even when the data has arrived")
def is_completed_stays_false_on_gloo():
    sender, receiver = launch(lesson.completion_on_gloo, 2, quiet=True)
    (send_before, send_after), (recv_before, recv_after) = sender["isend"], receiver["irecv"]
    holds = (receiver["arrived"] and not send_before and not recv_before
             and send_after and recv_after)
    return ClaimResult(holds, f"isend after the peer's recv returned: {send_before}, after "
                              f"wait: {send_after}; irecv with the data in its buffer "
                              f"({receiver['arrived']}): {recv_before}, after wait: {recv_after}")


@claim("01", "gloo reads a send buffer when the receiver is ready: a change made after "
             "isend, before wait(), is what the receiver gets")
def send_buffer_read_when_receiver_is_ready():
    got = launch(lesson.touch_before_wait, 2, quiet=True)[1].tolist()
    return ClaimResult(got == [100.0] * 4,
                       f"isend of ones, then *100 before wait: the receiver got {got}")


@once
def _any_source():
    return launch(lesson.any_source, 3, quiet=True)


@claim("01", "on gloo recv/irecv with src=None receive from whichever rank sends")
def any_source_recv_works_on_gloo():
    got = _any_source()[0]
    senders = {call: sorted(s for c, s, _ in got if c == call) for call in ("recv", "irecv")}
    values_match = all(value == 10.0 * sender for _, sender, value in got)
    holds = senders == {"recv": [1, 2], "irecv": [1, 2]} and values_match
    return ClaimResult(holds, f"senders seen by recv(src=None): {senders['recv']}, by "
                              f"irecv(src=None): {senders['irecv']}; each value from its "
                              f"sender: {values_match}")


@claim("01", "Work.source_rank() works but logs a deprecation warning (torch 2.13)")
def source_rank_is_deprecated():
    printed = _any_source().outputs[0]
    warned = re.search(r"source_rank API is being deprecated", printed) is not None
    return ClaimResult(warned, f"deprecation warning printed: {warned}")
