"""What a traced run and a written schedule share: lists of point-to-point calls.

    P2PCall                         send, isend, recv, irecv: which send, which receive
    SENDS, RECEIVES                 the calls that send / receive (the one definition)
    fifo_pairs(sends, recvs)        which send meets which receive, as gloo matches them
    wrap_calls(head, calls, width)  a rank's calls on lines of at most `width` characters

Used by the timelines (`labs.harness.notebook.plots`) and the schedule checker
(`labs.harness.schedule`); no plotting here, so worker processes can import it.
"""
from __future__ import annotations

from collections import defaultdict, deque

from labs.harness.ranks.words import Words


class P2PCall(Words):
    """The four point-to-point calls of torch.distributed, by the name a trace records."""

    SEND = "send"
    ISEND = "isend"
    RECV = "recv"
    IRECV = "irecv"

    @property
    def sends(self) -> bool:
        return self in SENDS

    @property
    def blocking(self) -> bool:
        return not self.startswith("i")


SENDS = frozenset({P2PCall.SEND, P2PCall.ISEND})
RECEIVES = frozenset({P2PCall.RECV, P2PCall.IRECV})
P2P_CALLS = tuple(P2PCall)


def fifo_pairs(sends, recvs) -> tuple[list, dict]:
    """Pair sends with receives as gloo does: FIFO per channel, the k-th send on a channel
    meets the k-th receive on it. `sends` and `recvs` are (channel, item) in posting order.
    Returns the pairs [(send item, recv item)] and, per channel, the sends left over."""
    queues = defaultdict(deque)
    for channel, send in sends:
        queues[channel].append(send)
    pairs = []
    for channel, recv in recvs:
        if queues.get(channel):
            pairs.append((queues[channel].popleft(), recv))
    return pairs, queues


def wrap_calls(head: str, calls: list[str], width: int) -> list[str]:
    """`head` then the calls joined by '; ', broken between calls (never inside one) before
    a line passes `width`; continuation lines are indented under the first call."""
    lines, line = [], head
    for k, call in enumerate(calls):
        piece = call + (";" if k < len(calls) - 1 else "")
        if len(line) + len(piece) > width and line != head:
            lines.append(line.rstrip())
            line = " " * len(head)
        line += piece + " "
    lines.append(line.rstrip())
    return lines
