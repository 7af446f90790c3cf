"""gloo's own failures in lesson 04's words: what the reader's code did, never only a signal
or a C++ enforce line.

gloo moves bytes between pairs of processes. Two of its failures are a reader's mistake that
lesson 04 shows (sections 6 and 7), and gloo says neither in those words:
  * a receive buffer smaller than the message: gloo's transport thread aborts the receiving
    process (SIGABRT), printing "op.preamble.length <= op.nbytes. 96 vs 48. Received data
    size doesn't match expected size" (the message's bytes, then the buffer's);
  * a send or receive to the rank's own process: gloo has no pair to itself and raises
    "[enforce fail at .../pair.cc:801] state_ >= CONNECTED. 1 vs 4. Pair is not connected".
"""
from __future__ import annotations

import re

import torch

from labs.harness.ranks.calls import RECEIVES, SENDS
from labs.harness.ranks.gloo_text import SOURCE_LOCATION

TOO_BIG = re.compile(r"op\.preamble\.length <= op\.nbytes\. (\d+) vs (\d+)\. "
                     r"Received data size doesn't match expected size")
NOT_CONNECTED = "Pair is not connected"


def explained(exc) -> tuple[int, str] | None:
    """(rank, what it did) for a WorkerError that is one of gloo's failures above, else
    None. The sentence follows 'rank N ' in a grader's message."""
    outputs = getattr(exc, "outputs", {}) or {}
    events = getattr(exc, "trace", None) or []
    for rank in sorted(outputs):
        found = TOO_BIG.search(outputs[rank])
        if found:
            return rank, _too_big(rank, int(found[1]), int(found[2]), events)
    for rank in sorted(exc.causes):
        if NOT_CONNECTED in exc.causes[rank]:
            return rank, _itself(rank, events)
    return None


def retold(line: str) -> str | None:
    """A line of the launch's report once the failure is told in the lesson's words: None
    where it only repeats gloo's (the abort's last words, the enforce line), another rank's
    self-send as "the same", what a peer said of the closed connection without gloo's C++
    location and socket."""
    if TOO_BIG.search(line) or line.lstrip().startswith(("terminate called after", "what():")):
        return None
    if NOT_CONNECTED in line:
        ranks = re.match(r"(ranks? [\d, ]+?) raised", line)
        return f"{ranks[1]}: the same, to itself" if ranks else None
    if SOURCE_LOCATION.search(line):
        head = line.split(": RuntimeError", 1)[0]
        return head if head != line else None
    return line


def _nbytes(event) -> int | None:
    try:
        return event.numel * getattr(torch, event.dtype).itemsize
    except (AttributeError, TypeError):
        return None


def _too_big(rank, sent, room, events) -> str:
    """The receive whose buffer held `room` bytes when `sent` arrived, and the send."""
    mine = next((e for e in reversed(events) if e.rank == rank and e.op in RECEIVES
                 and e.t_done is None and _nbytes(e) == room), None)
    theirs = next((e for e in reversed(events) if mine is not None and e.rank == mine.peer
                   and e.op in SENDS and e.peer == rank and _nbytes(e) == sent), None)
    what = f" in {mine.describe()}" if mine is not None else ""
    whose = f"; rank {theirs.rank} sent {theirs.describe()}" if theirs is not None else ""
    return (f"received a message larger than its buffer ({sent} bytes into a buffer of "
            f"{room}{what}{whose}), and gloo killed the receiving process (SIGABRT): gloo "
            f"moves bytes, and a receive buffer smaller than the message aborts the receiver "
            f"(lesson 04, section 7). {_too_big_advice(mine, theirs)}")


def _too_big_advice(mine, theirs) -> str:
    """What the record shows, and only that: a dtype that differs, sizes that differ in
    the same dtype, or (the aborted rank's record lost) what to compare."""
    if mine is not None and theirs is not None and mine.dtype != theirs.dtype:
        return (f"The buffer is {mine.dtype}, the message {theirs.dtype}: receive in the "
                f"dtype the peer sends (torch.empty_like(tensor); torch.empty(shape) is "
                f"float32 whatever the tensor's dtype)")
    if mine is not None and theirs is not None:
        return (f"Both are {mine.dtype}; the sizes differ ({theirs.numel} elements sent, "
                f"room for {mine.numel}): a receive takes the message its peer sent first, "
                f"so post receives in the order of the sends, each sized as its message")
    return ("Pair each receive with the send it takes (messages between two ranks arrive in "
            "the order they were sent): the same order, and a buffer of the message's "
            "shape and dtype")


def _itself(rank, events) -> str:
    own = next((e for e in events if e.rank == rank and e.peer == rank
                and e.op in SENDS | RECEIVES), None)
    what = f" ({own.describe()})" if own is not None else ""
    return (f"sent to or received from itself{what}: gloo has no connection from a rank to "
            f"its own process (\"Pair is not connected\", lesson 04, section 6). Leave rank "
            f"{rank} out of its own sends and receives: its own data needs no message")
