"""The reference defines the method: compare one rank's communication with the reference's.

Both bodies run on the same inputs in the same launch (labs.harness.grading.graded); each
leaves a record (labs.harness.grading.record). Per rank, they must agree on:

  * collectives that move data: the same ones (a barrier moves none and is ignored);
  * for every (direction, peer): the same messages, each with its size and dtype, in the
    same order (two ranks' messages match in the order they were posted), unless the
    exercise declares that their order may vary.

What may differ: blocking or not, batched or not, tags, the order across peers, and any
extra synchronisation that moves no data. An exercise declares more in its `Method`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from labs.harness.grading.buffers import digest
from labs.harness.grading.ops import Op


@dataclass(frozen=True)
class Method:
    """What an exercise's reference communication fixes, and what it leaves free.

    why:     the method in one sentence, for messages; {rank}, {p}, {next}, {prev} are
             filled in ("in the ring, rank {rank} sends only to rank {next} = ({rank} + 1) % {p}").
    ordered: messages to (or from) one peer must come in the reference's order.
    writes:  positions of the arguments the contract lets it write (in place).
    returns: "fresh" (new tensors), "input" (its first argument, in place), "view" (a view
             of an argument), "nothing" (None), or "any".
    returns_requests: it hands back Works for the caller to wait (not waited inside).
    pipelined: each send is posted no later, against the waits, than the reference's
             (order.py); every method waits its requests no later than the reference.
    contents: what travels is fixed by the contract (the data itself, not partial sums
             whose rounding depends on the order of additions): each rank sends every peer
             the same bytes as the reference, in any order (compare="exact" only).
    relays:  a broadcast: every message holds the data the call ends with, whole (the
             route is free, compare="routing": what travels is not).
    sums:    what travels is partial sums (a reduction): on a probe that makes every sum exact
             (labs.harness.grading.sums), each rank sends every peer the reference's sums;
             "sum", "mean" (a gradient average: divided by the world size before adding
             is allowed too), or "subsets" (the order of partners is free: each value adds
             up the sender's own data and other ranks').
    any_source: a receive from any source is judged by the rank it came from (only where
             a rank has one sender for the whole launch, so no message can overtake).
    compare: how much of the reference's communication is the method:
             "exact":   partners, and each message's size and dtype (in order, if ordered);
             "counts":  partners and dtypes; the number of messages per peer; no message
                        larger than the reference's largest (how a tensor is cut into chunks,
                        or in which step which part travels, may differ);
             "volume":  partners and dtypes, and the elements exchanged with each peer in
                        all (how they are split into messages is free);
             "routing": only point-to-point, in the reference's dtypes (who forwards to whom
                        is free: the exercise's own grader checks its rounds or values);
             "refused": set by the harness where the reference raised and the body did not
                        (routing without the dtypes: the exercise's grader judges it).
    probe_sizes: positions of the arguments whose sizes every rank shares (empty: all).
             Whether the body is called again (again.py) is decided from their bytes, and
             every rank must decide alike: name them where an argument exists on some
             ranks only (a scatter's chunks, on its root).
    """

    why: str
    ordered: bool = True
    writes: tuple = ()
    returns: str = "fresh"
    returns_requests: bool = False
    compare: str = "exact"
    pipelined: bool = False
    contents: bool = False
    relays: bool = False
    sums: str = ""
    any_source: bool = False
    probe_sizes: tuple = ()


def _messages(ops, kind, empty=False) -> dict:
    """{peer: [(numel, dtype), ...]} of this rank's sends or receives, in posting order.
    Empty messages carry nothing: left out unless `empty`."""
    found: dict = {}
    for op in ops:
        if op.kind == kind and (op.numel or empty):
            found.setdefault(op.peer, []).append((op.numel, op.dtype))
    return found


def _collectives(ops) -> Counter:
    return Counter(op.name for op in ops if op.kind == "collective")


def _sizes(messages) -> str:
    shown = ", ".join(f"{n} x {d}" for n, d in messages[:6])
    return shown + (f", ... ({len(messages)} in all)" if len(messages) > 6 else "")


def _peer(peer) -> str:
    return "any source" if peer is None else f"rank {peer}"


def _why(method, rank, world_size) -> str:
    return method.why.format(rank=rank, p=world_size, next=(rank + 1) % max(world_size, 1),
                             prev=(rank - 1) % max(world_size, 1))


def differences(mine: list[Op], reference: list[Op], method: Method, *, rank: int,
                world_size: int) -> list[str]:
    """What this rank did differently from the reference, one sentence each (empty: none)."""
    why = _why(method, rank, world_size)
    if method.any_source:
        mine = [replace(op, peer=op.source) if op.source is not None else op for op in mine]
    found = []
    extra = forbidden_collectives(mine, reference, method, rank=rank, world_size=world_size)
    if extra:
        return extra
    missing = _collectives(reference) - _collectives(mine)
    if missing:
        found.append(f"rank {rank} never called {', '.join(sorted(missing))} ({why})")
    if method.compare in ("routing", "refused"):
        anyone = [op for op in mine if op.kind == "recv" and op.peer is None and op.numel]
        if anyone:      # (the other comparisons find no sender "any source" in the reference)
            return found + [f"rank {rank} posted {anyone[0].describe()}; in this method every "
                            f"receive names its sender (from any source, it can take another "
                            f"call's message): {why}"]
        return found + _compare_routing(mine, reference, rank=rank, world_size=world_size,
                                        why=why, dtypes=method.compare == "routing")
    for kind, verb, prep in (("send", "sent", "to"), ("recv", "received", "from")):
        does = "sends" if kind == "send" else "receives"
        got, expected = _messages(mine, kind), _messages(reference, kind)
        if method.compare == "counts":
            found += _compare_counts(got, _messages(reference, kind, empty=True), rank=rank,
                                     verb=verb, does=does, prep=prep, why=why) or \
                _counts_floor(got, expected, rank=rank, verb=verb, prep=prep, why=why)
        else:           # "volume" lets sizes differ: only the elements in all count
            found += (method.compare != "volume" and _sizes_only(
                _messages(mine, kind, empty=True), _messages(reference, kind, empty=True),
                method, rank=rank, kind=kind, prep=prep, why=why)) or \
                _compare_messages(got, expected, method, rank=rank, verb=verb, does=does,
                                  prep=prep, why=why)
    if method.contents and not found:
        found += _compare_contents(mine, reference, rank=rank, why=why)
    return found


def forbidden_collectives(mine, reference, method, *, rank, world_size) -> list[str]:
    """A collective the reference does not call: the lesson's point, said first, also when
    the call raised (gloo's own check on a size it cannot split is not the learner's bug)."""
    extra = _collectives(mine) - _collectives(reference or [])
    if not extra:
        return []
    return [f"rank {rank} called {', '.join(sorted(extra))}: the lesson builds this from "
            f"point-to-point sends and receives ({_why(method, rank, world_size)})"]


def _sizes_only(got, expected, method, *, rank, kind, prep, why) -> list[str]:
    """Empty messages counted: the same messages with each peer, one size aside (an empty
    chunk received into a one-element buffer). Said as the size it is, not as one message
    more: the learner's messages match the method's in number."""
    for peer in sorted(set(got) & set(expected), key=lambda p: (p is None, p)):
        mine, theirs = got[peer], expected[peer]
        dtypes = [d for _, d in mine], [d for _, d in theirs]
        if len(mine) != len(theirs) or (mine == theirs if method.ordered else
                                        Counter(mine) == Counter(theirs)) or \
                sorted(dtypes[0]) != sorted(dtypes[1]):       # a dtype is said by its own check
            continue
        if method.ordered:
            i, (n, d) = next((i, m) for i, m in enumerate(mine) if m != theirs[i])
            m = theirs[i][0]
        else:
            (n, d), m = next(iter(Counter(mine) - Counter(theirs))), None
        what = "a receive into a buffer" if kind == "recv" else "a send"
        does = "receives" if kind == "recv" else "sends"
        size = f" where the method {does} {m} x {d}" if m is not None else ""
        return [f"rank {rank} posted {what} of {n} x {d} {prep} {_peer(peer)}{size} (the "
                f"method has as many messages; only this size differs): size it as the "
                f"chunk it carries, empty chunks included: {why}"]
    return []


def _compare_messages(got, expected, method, *, rank, verb, does, prep, why) -> list[str]:
    """compare="exact" or "volume": the same partners, and per peer the same messages (or,
    "volume", the same elements in all)."""
    found = []
    for peer in sorted(set(got) - set(expected), key=lambda p: (p is None, p)):
        where = ", ".join(_peer(p) for p in sorted(expected))
        only = (f"in this method rank {rank} {does} {prep} {where} only" if where else
                f"in this method rank {rank} {does} nothing in this case")
        found.append(f"rank {rank} {verb} {_sizes(got[peer])} {prep} {_peer(peer)}; "
                     f"{only}: {why}")
    for peer in sorted(set(expected) & set(got)):
        found += _compare_peer(got[peer], expected[peer], method, rank=rank, verb=verb,
                               does=does, prep=prep, peer=peer, why=why)
    for peer in sorted(set(expected) - set(got)):
        found.append(f"rank {rank} never {verb} anything {prep} {_peer(peer)}; expected "
                     f"{_sizes(expected[peer])}: {why}")
    if method.compare == "volume" and not found:
        found += _compare_volume(got, expected, rank=rank, verb=verb, prep=prep, why=why)
    return found


def contents_problems(mine, reference, method, *, rank, world_size) -> list[str]:
    """The contents comparison alone (a second call, on other values)."""
    return _compare_contents(mine, reference, rank=rank, why=_why(method, rank, world_size))


def _compare_contents(mine, reference, *, rank, why) -> list[str]:
    """Each send holds what the reference sends that peer (the bytes, compared by hash, in
    any order): not a difference from an earlier message, a value worked out for the
    receiver, or a placeholder while the data goes some other way."""
    left: dict = {}
    for op in (o for o in mine if o.kind == "send" and o.numel):
        expected = left.setdefault(op.peer, Counter(
            o.digest for o in reference if o.kind == "send" and o.numel and o.peer == op.peer))
        if expected[op.digest] > 0:
            expected[op.digest] -= 1
            continue
        return [f"rank {rank} sent {op.describe()} holding other values than the method "
                f"sends there ({why}): send the data itself, not a value worked out from it, "
                f"a difference from an earlier call, or a stand-in"]
    return []


def relay_problems(mine, final, method, *, rank, world_size) -> list[str]:
    """A broadcast relays the data: each send holds the bytes every rank ends with."""
    wanted = digest(final) if isinstance(final, torch.Tensor) and final.numel() else None
    for op in mine:
        if wanted and op.kind == "send" and op.numel and op.digest != wanted:
            return [f"rank {rank} sent {op.describe()} holding other values than the tensor the "
                    f"broadcast delivers ({_why(method, rank, world_size)}): forward the data "
                    f"itself, whole, not an encoding of it or a part"]
    return []


def _compare_counts(got, expected, *, rank, verb, does, prep, why) -> list[str]:
    """compare="counts": partners among the reference's (empty messages included: with
    fewer elements than ranks, which partner gets one depends on how the tensor is cut), at
    most as many messages with each, none larger than the reference's largest."""
    for peer in sorted(set(got) - set(expected), key=lambda p: (p is None, p)):
        where = ", ".join(_peer(p) for p in sorted(expected, key=lambda p: (p is None, p)))
        return [f"rank {rank} {verb} {_sizes(got[peer])} {prep} {_peer(peer)}; in this method "
                f"rank {rank} {does} {prep} {where or 'nobody in this case'} only: {why}"]
    for peer in sorted(got, key=lambda p: (p is None, p)):
        if len(got[peer]) > len(expected[peer]):
            return [f"rank {rank} {verb} {len(got[peer])} message(s) {prep} {_peer(peer)}; the "
                    f"method has {len(expected[peer])}: {why}"]
    dtypes = {d for messages in expected.values() for _, d in messages}
    for peer, messages in got.items():
        for n, d in messages:
            if dtypes and d not in dtypes:
                return [f"rank {rank} {verb} {n} x {d} {prep} {_peer(peer)}; the messages "
                        f"travel in the tensor's own dtype ({', '.join(sorted(dtypes))}), "
                        f"never widened or narrowed"]
    largest = max((n for messages in expected.values() for n, _ in messages), default=0)
    big = [(peer, n) for peer, messages in got.items() for n, _ in messages if n > largest]
    if big:
        peer, n = big[0]
        return [f"rank {rank} {verb} a message of {n} elements {prep} {_peer(peer)}; in this "
                f"method no message holds more than {largest}: {why}"]
    return []


def _totals(messages) -> Counter:
    """{(peer, dtype): elements} of {peer: [(numel, dtype), ...]}."""
    totals: Counter = Counter()
    for peer, sent in messages.items():
        for n, d in sent:
            totals[peer, d] += n
    return totals


def _counts_floor(got, expected, *, rank, verb, prep, why) -> list[str]:
    """compare="counts" bounds messages from above; the data must also travel: in each
    dtype, at least the reference's elements in all, less one per message (the tensor may
    be cut elsewhere, and which partner gets which part may differ: another halving order)."""
    mine, theirs = Counter(), Counter()
    for (_, dtype), n in _totals(got).items():
        mine[dtype] += n
    for (_, dtype), n in _totals(expected).items():
        theirs[dtype] += n
    for dtype, reference in sorted(theirs.items()):
        slack = sum(1 for sent in expected.values() for _, d in sent if d == dtype)
        if mine[dtype] < reference - slack:
            where = ", ".join(_peer(p) for p in sorted(expected, key=lambda p: (p is None, p)))
            return [f"rank {rank} {verb} {mine[dtype]} {dtype} elements in all ({prep} "
                    f"{where}); the method moves {reference}: {why}"]
    return []


def _compare_routing(mine, reference, *, rank, world_size, why, dtypes=True) -> list[str]:
    """compare="routing": the reference's dtypes, every rank's data arrives, roots keep
    their role; the route itself is free. "refused" (the reference raised where the body
    did not: its data never moved, so its dtypes say nothing of the body's): the same
    without the dtypes."""
    return ((dtypes and _compare_dtypes(mine, reference, rank=rank))
            or _routing_floor(mine, reference, rank=rank, why=why)
            or _routing_roles(mine, reference, rank=rank, world_size=world_size, why=why))


def _routing_floor(mine, reference, *, rank, why) -> list[str]:
    """compare="routing" leaves the route free, not the arrival: a rank receives at least
    what it receives in the reference (any tree or chain delivers the same data to each
    rank; which ranks forward it depends on the tree)."""
    def total(ops):
        return sum(op.numel for op in ops if op.kind == "recv")
    if total(mine) < total(reference):
        return [f"rank {rank} received {total(mine)} elements in all; in this method it "
                f"receives {total(reference)}: {why}"]
    return []


def _routing_roles(mine, reference, *, rank, world_size, why) -> list[str]:
    """compare="routing": the root keeps its role, whatever the route. A rank that in the
    reference only receives, from every other rank (a gather's dst), sends nothing; one
    that only sends, to every other rank (a broadcast's src), receives nothing."""
    def peers(ops, kind):
        return {op.peer for op in ops if op.kind == kind and op.numel}
    others = world_size - 1
    for kind, opposite, role in (("send", "recv", "sends to"), ("recv", "send", "receives from")):
        if len(peers(reference, kind)) == others and not peers(reference, opposite):
            wrong = [op for op in mine if op.kind == opposite and op.numel]
            if wrong:
                return [f"rank {rank} posted {wrong[0].describe()}; in this method it only "
                        f"{role} the other ranks, whatever the route: {why}"]
    return []


def _compare_volume(got, expected, *, rank, verb, prep, why) -> list[str]:
    """compare="volume": the same number of elements with each peer in each dtype, however
    split (a float64 gradient sent as float32 is not the same data)."""
    mine, theirs = _totals(got), _totals(expected)
    for peer, dtype in sorted(set(mine) | set(theirs), key=str):
        if mine[peer, dtype] != theirs[peer, dtype]:
            moves = " and ".join(f"{n} {d}" for (p, d), n in sorted(theirs.items(), key=str)
                                 if p == peer)
            return [f"rank {rank} {verb} {mine[peer, dtype]} {dtype} elements {prep} "
                    f"{_peer(peer)} in all; the method moves {moves or 'nothing'} elements, "
                    f"each in its own dtype: {why}"]
    return []


def _compare_dtypes(mine, reference, *, rank) -> list[str]:
    """compare="routing": every message in a dtype the reference's messages have."""
    dtypes = {op.dtype for op in reference if op.kind in ("send", "recv") and op.numel}
    other = [op for op in mine if op.kind in ("send", "recv") and op.numel
             and dtypes and op.dtype not in dtypes]
    if other:
        return [f"rank {rank} posted {other[0].describe()}; the messages travel in the "
                f"tensor's own dtype ({', '.join(sorted(dtypes))}), never widened or narrowed"]
    return []


def _compare_peer(got, expected, method, *, rank, verb, does, prep, peer, why) -> list[str]:
    dtypes = {d for _, d in expected}
    wrong_dtype = [(n, d) for n, d in got if d not in dtypes]
    if wrong_dtype:
        n, d = wrong_dtype[0]
        return [f"rank {rank} {verb} {n} x {d} {prep} {_peer(peer)}; the messages travel in "
                f"the tensor's own dtype ({', '.join(sorted(dtypes))}), never widened or "
                f"narrowed"]
    if method.compare != "exact":
        return []          # counts per peer and the largest size: checked by the caller
    same = got == expected if method.ordered else Counter(got) == Counter(expected)
    if same:
        return []
    order = "" if method.ordered else " (in any order)"
    return [f"rank {rank} {verb} {len(got)} message(s) {prep} {_peer(peer)}: {_sizes(got)}; "
            f"the method {does} {len(expected)}{order}: {_sizes(expected)}: {why}"]


def moved_before_refusing(ops, expected, exc) -> list[str]:
    """The body refused, as the reference does: did it move more data first?"""
    def moving(record):
        return [op for op in record if op.kind in ("send", "recv", "collective") and op.numel]
    mine, theirs = moving(ops), moving(expected)
    if len(mine) <= len(theirs):
        return []
    before = ", ".join(op.describe() for op in theirs) or "nothing"
    return [f"rank {dist.get_rank()} raised {type(exc).__name__} only after "
            f"{mine[len(theirs)].describe()}; refuse before that data moves (before refusing, "
            f"the method posts {before})"]
