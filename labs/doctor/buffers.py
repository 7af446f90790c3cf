"""Buffers: used while in flight (the version counter at the wait, the buffer watch), freed
while in flight, read on a CUDA stream the wait did not order, refused for not being
contiguous, and matched pairs whose sizes or dtypes disagree (gloo matches bytes, nothing
else)."""
from __future__ import annotations

from labs.doctor.diagnose import NCCL_SIZES
from labs.doctor.findings import Finding
from labs.doctor.stream_order import WAIT_SOURCE
from labs.doctor.watch import FREED

NCCL_FREED = ("the GPU's kernel reads (or, for a receive, writes) memory the caching allocator "
              "may already have given to another tensor: undefined. ProcessGroupNCCL keeps a "
              "reference to the tensor until the wait (or records its stream), which keeps the "
              "storage object, not its bytes: resize_ frees them anyway")
FREED_SOURCE = ("pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp "
                "(TORCH_NCCL_AVOID_RECORD_STREAMS: 'stashes live references to those tensors "
                "until after user-facing streams are synced'; stashed_for_allocator_safety_); "
                "torch docs, CUDA semantics, memory management (the caching allocator reuses "
                "freed blocks)")
NCCL_RACE = ("on a GPU the op can run before the transfer finished: wait() made only the "
             "stream it was called on wait for NCCL. Make the stream that uses the buffer wait "
             "for the one that waited (`user.wait_stream(waiter)`, or an Event recorded on the "
             "waiter and waited on the user) after the wait, or call wait() on the stream that "
             "uses it")
NOT_CONTIGUOUS = "input tensor has to be contiguous"
NCCL_NONCONTIGUOUS = (
    "no error: ProcessGroupNCCL's check_gpu_single_tensor only warns once for point-to-point "
    "('Detected non-contiguous tensor in P2P operations...'), and the call hands NCCL the "
    "view's data_ptr() and numel(): {what}")
NONCONTIGUOUS_SOURCE = ("pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, "
                        "check_gpu_single_tensor (p2p: TORCH_WARN_ONCE); torch/csrc/cuda/nccl.cpp, "
                        "send and recv (ncclSend/ncclRecv(tensor.data_ptr(), tensor.numel(), ...))")
CONSEQUENCES = ("unmatched_send", "unmatched_recv", "call_failed")


def in_flight_findings(runs) -> list:
    out = []
    for run in runs.values():
        for c in run.calls:
            notes = c.touched + ([(c.wait_where or c.where, c.changed)] if c.changed else [])
            if not notes:
                continue
            where, text = notes[0]
            if text == FREED:
                out.append(_freed(c, where))
                continue
            out.append(Finding(
                "buffer_in_flight", f"the buffer of {c.describe()} used while in flight",
                (c.rank,), [(c.rank, c.where), (c.rank, where)],
                f"{text}: {_race(c)}", "the same race on NCCL, on the GPU's "
                "stream: the buffer belongs to the transfer until wait()"))
    return out


def _freed(c, where) -> Finding:
    seen = ("gloo's thread may still be copying from that memory: the peer receives whatever "
            "it then holds" if c.kind == "send" else "gloo's thread may still write the "
            "message into that memory")
    return Finding("buffer_freed", f"the storage of {c.describe()} freed while in flight",
                   (c.rank,), [(c.rank, where), (c.rank, c.where)], f"{FREED}: {seen}",
                   NCCL_FREED, FREED_SOURCE)


def stream_findings(runs) -> list:
    """A received buffer touched on a stream the wait did not order (NCCL only: on gloo and
    here every op ran on the CPU after the wait returned)."""
    out = []
    for run in runs.values():
        for c in run.calls:
            for where, text in c.raced[:1]:
                out.append(Finding(
                    "stream_race", f"the buffer of {c.describe()} read on a stream the wait "
                    f"did not order", (c.rank,), [(c.rank, where), (c.rank, c.where)],
                    f"fine here: {text}; every op ran on the CPU once the wait returned",
                    NCCL_RACE, WAIT_SOURCE, nccl_only=True))
    return out


def refused_findings(runs) -> list:
    """A send or receive of a non-contiguous tensor: gloo refuses it at the call."""
    out = []
    for run in runs.values():
        for c in run.calls:
            if not (c.p2p and NOT_CONTIGUOUS in c.raised):
                continue
            what = ("it sends numel elements read contiguously from the view's first one: the "
                    "wrong values" if c.kind == "send" else "the message is written "
                    "contiguously from the view's first element: into the wrong elements of "
                    "the view and over elements of its base outside it")
            peer = () if c.peer is None else (c.peer,)
            out.append(Finding(
                "not_contiguous", "a send or receive of a non-contiguous tensor",
                (c.rank, *peer), [(c.rank, c.where)], f"rank {c.rank}'s {c.describe()}: "
                f"gloo refuses non-contiguous tensors: the call raised '{NOT_CONTIGUOUS}'. "
                f"What the peer saw then (its message lost, 'Connection closed') follows "
                f"from it. Fix: pass a contiguous buffer (receive into torch.empty(...), "
                f"then copy_ into the view)", NCCL_NONCONTIGUOUS.format(what=what),
                NONCONTIGUOUS_SOURCE))
    return out


def without_consequences(found: list, refused: list) -> list:
    """The peers' failures that a refused call explains are not more problems."""
    ranks = {r for f in refused for r in f.ranks}
    return [f for f in found if f.kind not in CONSEQUENCES or not set(f.ranks) <= ranks]


def _race(c) -> str:
    if c.kind == "recv":
        return ("a read before wait() sees stale or partial data, and a write can be "
                "overwritten by the message (a race with gloo's thread)")
    return ("what is sent is whatever the buffer held at the moment gloo's thread copied it "
            "(a race)")


def _abort_seen(run) -> bool:
    return run.exit is None and "Received data size doesn't match" in run.stderr


def size_findings(runs, pairs) -> list:
    out, seen = [], set()
    for run in runs.values():
        for s in run.calls:
            q = pairs.get(id(s))
            if s.kind != "send" or q is None or id(s) in seen:
                continue
            seen.add(id(s))
            if s.nbytes == q.nbytes and s.dtype == q.dtype:
                continue
            out.append(_mismatch(s, q, runs[q.rank]))
    return out


def _mismatch(s, q, receiver) -> Finding:
    where = [(s.rank, s.where), (q.rank, q.where)]
    pair = f"rank {s.rank}'s {s.describe()} -> rank {q.rank}'s {q.describe()}"
    if q.nbytes < s.nbytes:
        seen = ("rank {r} was killed by SIGABRT ('Received data size doesn't match "
                "expected size'): nothing can catch it" if _abort_seen(receiver) else
                "rank {r} finished before the message arrived; had it arrived, gloo would "
                "have aborted it (SIGABRT)" if receiver.finished else
                "gloo aborts the receiving process (SIGABRT) when the message arrives")
        return Finding("size_mismatch", "the receive buffer is smaller than the message",
                       (s.rank, q.rank), where, f"{pair}: {seen.format(r=q.rank)}",
                       NCCL_SIZES)
    if q.nbytes > s.nbytes:
        return Finding("size_mismatch", "the receive buffer is larger than the message",
                       (s.rank, q.rank), where, f"{pair}: gloo filled the first {s.nbytes} "
                       f"bytes and left the rest of the buffer as it was, without an error",
                       NCCL_SIZES)
    return Finding("dtype_mismatch", f"{s.dtype} sent, read as {q.dtype}", (s.rank, q.rank),
                   where, f"{pair}: the same {s.nbytes} bytes, silently reinterpreted "
                   f"(gloo matches bytes, not types)", NCCL_SIZES)
