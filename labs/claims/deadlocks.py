"""Lesson 04's claims: what hangs, what fails at once, what corrupts silently, and what a
timeout leaves behind (plus lesson 05's empty message). Workers come from labs.deadlocks;
the ones written here combine several quick checks into one launch."""
import datetime

import torch
import torch.distributed as dist

import labs.deadlocks as lesson
from labs import launch
from labs.claims.common import HANG, Ended, attempt, error_text, once
from labs.harness.ranks.gloo_text import abort_reason, stable
from labs.claims.registry import ClaimResult, claim


def batched_exchange(rank, peer, numel):
    """Both ranks send to each other first, as one batch: [isend to peer, irecv from peer]."""
    mine, theirs = torch.full((numel,), float(rank)), torch.empty(numel)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                        dist.P2POp(dist.irecv, theirs, peer)]):
        work.wait()
    return bool((theirs == peer).all())


def quick_checks(rank, world_size):
    """Lesson 04's checks that neither hang nor kill, one after the other on ranks 0 and 1."""
    peer = 1 - rank
    found = {"batched": {numel: batched_exchange(rank, peer, numel) for numel in (10, 1_000_000)},
             "empty": batched_exchange(rank, peer, 0)}
    for name in ("larger_recv_buffer", "other_dtype_same_bytes", "float32_into_float64"):
        found[name] = getattr(lesson, name)(rank, world_size, 4)   # rank 1: {expected, got}
    transposed = torch.zeros(4, 2).t()                  # a view whose rows are not contiguous
    post = dist.isend if rank == 0 else dist.irecv
    try:
        post(transposed, peer).wait()
        found["non-contiguous"] = "no error"
    except (RuntimeError, ValueError) as exc:
        found["non-contiguous"] = error_text(exc)
    return found


@once
def _quick():
    return launch(quick_checks, 2, quiet=True)


def _hangs(fn, *blocked_in):
    """Run `fn` on 2 ranks; it must hang with each of `blocked_in` in the diagnosis."""
    outcome = attempt(fn, 2, args=(10,), **HANG)
    holds = outcome.kind == Ended.HANG and all(b in outcome.brief for b in blocked_in)
    return ClaimResult(holds, f"{outcome.kind}: {outcome.brief}")


def _both_ranks_raise(fn, error):
    """Run `fn` on 2 ranks; both must fail with `error` in their message."""
    outcome = attempt(fn, 2)
    holds = outcome.kind == Ended.ERROR and outcome.brief.count(error) == 2
    return ClaimResult(holds, f"{outcome.kind}: {stable(outcome.brief)}")


@claim("04", "two ranks that both call blocking send first deadlock on gloo, even for 10 elements")
def head_to_head_blocking_sends_deadlock():
    return _hangs(lesson.head_to_head, "rank 0: blocked in send(", "rank 1: blocked in send(")


@claim("04", "the same exchange posted as one batch_isend_irecv completes")
def batched_exchange_completes():
    done = _quick()[0]["batched"]
    return ClaimResult(all(done.values()), f"both ranks send first, in one batch: 10 elements "
                                           f"exchanged: {done[10]}, 1,000,000: {done[1_000_000]}")


@claim("04", "gloo honours tags: a send with tag 1 never matches a recv with tag 2 (a hang)")
def tag_mismatch_hangs():
    return _hangs(lesson.tag_mismatch, "send(to 1, tag 1", "recv(from 0, tag 2")


@claim("04", "isend/irecv to your own rank fails at the call on gloo (Pair is not connected)")
def self_send_fails_at_the_call():
    return _both_ranks_raise(lesson.send_to_self, "Pair is not connected")


@claim("04", "a blocking send to your own rank is a ValueError")
def blocking_send_to_self_value_error():
    return _both_ranks_raise(lesson.blocking_send_to_self, "ValueError: Invalid destination rank")


def _received(name):
    return _quick()[1][name]["got"].tolist()


@claim("04", "a receive buffer larger than the message: gloo fills a prefix, the tail keeps "
             "its old values, no error")
def larger_recv_buffer_fills_a_prefix():
    got = _received("larger_recv_buffer")
    return ClaimResult(got == [0.0, 1.0, 2.0, 3.0, -1.0, -1.0],
                       f"sent [0.0, 1.0, 2.0, 3.0] into 6 x -1.0: received {got}")


@claim("04", "same byte count, other dtype: gloo reinterprets the bytes silently")
def same_bytes_other_dtype_reinterpreted():
    got = _received("other_dtype_same_bytes")
    return ClaimResult(got == [0, 1065353216, 1073741824, 1077936128],
                       f"float32 [0.0, 1.0, 2.0, 3.0] into int32: received {got}")


@claim("04", "float32 sent into a float64 buffer of the same numel: garbage, no error")
def float32_into_float64_is_garbage():
    got = _received("float32_into_float64")
    holds = got[0] == 0.0078125 and got[2:] == [-1.0, -1.0]
    return ClaimResult(holds, f"float32 [0.0, 1.0, 2.0, 3.0] into 4 x -1.0 float64: received "
                              f"[{got[0]:g}, {got[1]:.9g}, {got[2]:g}, {got[3]:g}]")


@claim("04", "a receive buffer smaller than the message aborts the receiving process (SIGABRT)")
def smaller_recv_buffer_kills_the_receiver():
    outcome = attempt(lesson.smaller_recv_buffer, 2, args=(10,))
    reason = abort_reason(outcome.error) if outcome.kind == Ended.ERROR else ""
    holds = (outcome.brief == "rank 1: was killed by signal SIGABRT"
             and "Received data size doesn't match expected size" in reason)
    return ClaimResult(holds, f"{outcome.brief or outcome.kind}: {reason}")


@claim("04", "gloo point-to-point rejects a non-contiguous tensor at the call")
def non_contiguous_tensor_rejected():
    send, recv = (r["non-contiguous"] for r in _quick())
    holds = all(e == "RuntimeError: input tensor has to be contiguous" for e in (send, recv))
    return ClaimResult(holds, f"isend: {send}; irecv: {recv}")


@once
def _timed_out():
    # The group's timeout is 5 s, so a wait that gives up after 1 s used its own.
    return launch(lesson.timeout_closes_pair, 2, timeout=15, pg_timeout=5, quiet=True)[0]


@claim("04", "work.wait(timeout=...) honours its own timeout, not the group's")
def wait_timeout_is_honoured():
    seen = _timed_out()[0]
    expected = "wait(timeout=1 s): Timed out waiting 1000ms for recv operation to complete"
    return ClaimResult(seen == expected, f"group timeout 5 s; {seen}")


@claim("04", "after a gloo timeout the pair is closed: every later op with that peer fails")
def timeout_closes_the_pair():
    later = _timed_out()[1:]
    holds = later == ["send to rank 1: Application timeout caused pair closure",
                      "barrier: Application timeout caused pair closure"]
    return ClaimResult(holds, "; ".join(later))


def timeout_after_set_pg_timeout(rank, world_size):
    """Raise the group's timeout to 30 s, then wait for a message that never comes."""
    dist.distributed_c10d._set_pg_timeout(datetime.timedelta(seconds=30))
    if rank != 1:
        return None
    try:
        dist.recv(torch.zeros(1), src=0, tag=7)
        return "received"
    except RuntimeError as exc:
        return error_text(exc)


@claim("04", "_set_pg_timeout does not change gloo's point-to-point timeout (fixed when the "
             "group is created)")
def set_pg_timeout_leaves_p2p_timeout():
    outcome = attempt(timeout_after_set_pg_timeout, 2, timeout=10, pg_timeout=1)
    seen = outcome.results[1] if outcome.kind == "returned" else f"{outcome.kind}: {outcome.brief}"
    holds = "Timed out waiting 1000ms for recv operation" in seen
    return ClaimResult(holds, f"group created with 1 s, then set to 30 s; the recv: {seen}")


@claim("05", "gloo sends and receives empty (0-element) tensors without trouble")
def empty_messages_work():
    done = [r["empty"] for r in _quick()]
    return ClaimResult(all(done), f"both ranks exchanged a 0-element tensor in one batch: {done}")
