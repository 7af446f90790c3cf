"""When requests are waited, compared with the reference: the steps of the method.

The reference's record says, for each request, which of its later posts come after its
wait. The body's matching request (the k-th send to the same peer, the k-th receive from
it) must be waited before the body posts the matching ops too: a ring step's send waited
only at the end, or the lengths batch half waited before the data batch, is another
method, however right the values. Blocking calls wait at once, so they always agree.

Only posts the body makes in the reference's order are compared: rounds taken in another
order (recursive doubling far partner first) are the method comparison's to judge.

A pipelined method also fixes the other side: a send the reference posts before it waits
some receive is posted before the body waits that receive too (each segment forwarded as
soon as it is reduced, not a whole step at a time).
"""
from __future__ import annotations

from labs.harness.grading.ops import Op

BLOCKING = frozenset({"send", "recv"})     # dist.send / dist.recv: a Work waited at once


def _keyed(ops: list[Op]) -> dict[tuple, Op]:
    """{(kind, peer, dtype, k): the k-th op of that kind and dtype with that peer, in posting
    order}. The dtype scopes the pairing to what a contract fixes: calls on tensors of other
    dtypes (one ring per dtype group) may come in any order, and the k-th float16 message is
    then still the reference's k-th float16 one. Empty messages carry nothing and are left
    out: an extra one (a "handshake") changes no step."""
    seen: dict[tuple, int] = {}
    keyed = {}
    for op in sorted((o for o in ops if o.kind in ("send", "recv") and o.numel),
                     key=lambda o: o.seq):
        k = seen.get((op.kind, op.peer, op.dtype), 0)
        seen[(op.kind, op.peer, op.dtype)] = k + 1
        keyed[(op.kind, op.peer, op.dtype, k)] = op
    return keyed


def _nth(key: tuple, ops: dict) -> str:
    """'a send of 4 x float32 to rank 1 (its 2nd float32 send to that rank)'."""
    kind, _, dtype, k = key
    n = k + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    way = "to" if kind == "send" else "from"
    return f"{ops[key].describe()} (its {n}{suffix} {dtype} {kind} {way} that rank)"


def order_problems(mine: list[Op], reference: list[Op], *, rank: int,
                   pipelined: bool = False) -> list[str]:
    body, ref = _keyed(mine), _keyed(reference)
    if set(body) != set(ref):          # other messages: the method comparison says so
        return []
    for key, first in ref.items():
        if first.api in BLOCKING or first.waited_at is None or body[key].waited_at is None:
            continue     # blocking in the reference (the body may overlap); or never waited
        for later_key, later in ref.items():
            # posted after this request, as in the reference (rounds in another order: free)
            posted = body[later_key].seq
            if later.seq >= first.waited_at and body[key].seq < posted < body[key].waited_at:
                return [f"rank {rank} posted {_nth(later_key, body)} before waiting for "
                        f"{_nth(key, body)}; the method waits for that request first "
                        f"(every request of a step, sends too, before the next step posts)"]
    for key, send in ref.items() if pipelined else ():
        if key[0] != "send":
            continue
        for wait_key, waited in ref.items():     # the receives (a send waited at once: fine)
            if wait_key[0] == "recv" and waited.waited_at is not None and \
                    send.seq < waited.waited_at and \
                    body[wait_key].waited_at is not None and \
                    body[key].seq >= body[wait_key].waited_at:
                return [f"rank {rank} waited for {_nth(wait_key, body)} before posting "
                        f"{_nth(key, body)}; the pipeline forwards each segment as soon "
                        f"as it is reduced, while the later segments still travel"]
    return []
