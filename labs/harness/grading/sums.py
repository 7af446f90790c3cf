"""What travels in a reduction: the partial sums, checked on a probe that makes them exact.

A ring or a recursive-doubling all-reduce sends partial sums, and their rounding depends on
the order of the additions, which the method leaves free: their bytes cannot be compared
with the reference's. On the probe they can: every rank's tensor (or every gradient) holds
2**rank everywhere, so every partial sum is an integer that is exact in any order (and in
every dtype the probe is used for), and it names the ranks it adds up (7 = ranks 0, 1, 2).

Each rank must then send every peer the same sums as the reference (in any order, however
the tensor is cut): a negated sum, a difference from an earlier call's message, or a raw
input forwarded for the receiver to add up later holds other values. A gradient average
may divide before it adds (Method.sums == "mean"): then every sum is the reference's divided
by the world size, within the rounding of the dtype. Where the order of the partners is free
(recursive doubling, halving-doubling: "subsets"), which sum goes to which peer is free too:
each value must add up the sender's own data (and other ranks').
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from labs.harness.grading.compare import _why
from labs.harness.grading.state import copy_args


def _holds_sums(dtype, world_size) -> bool:
    """Can `dtype` hold every sum of distinct powers 2**0 .. 2**(world_size - 1) exactly?"""
    if dtype == torch.bool or dtype.is_complex:
        return False
    return int(torch.tensor(2 ** world_size - 1).to(dtype).item()) == 2 ** world_size - 1


# The positional probe: element j of rank r's data holds 2**r + j * 2**world_size (for a
# model, j counts on through its gradients), so each element still names the ranks it adds
# up (its value mod 2**world_size) and also where it sits: a chunk sent reversed or
# permuted, or values worked out from the sums (differences, deltas), show. Only where the
# dtype holds every sum exactly: the largest value each dtype holds without rounding (a
# large tensor's elements share positions block by block: _block).
POSITIONAL = {torch.float16: 1 << 11, torch.bfloat16: 1 << 8, torch.float32: 1 << 24,
              torch.float64: 1 << 53, torch.int32: (1 << 31) - 1, torch.int64: (1 << 63) - 1}


def _fits(dtype, numel, world_size) -> bool:
    largest = 2 ** world_size - 1 + world_size * max(numel - 1, 0) * 2 ** world_size
    return dtype in POSITIONAL and largest <= POSITIONAL[dtype]


def _block(dtype, numel, world_size) -> int:
    """How many elements share a position so that `numel` of them fit `dtype`: 1 where
    they all fit. A large tensor's positions then grow block by block: a chunk still shows
    reversed, rotated or interleaved (only a permutation inside one block does not)."""
    if _fits(dtype, numel, world_size):
        return 1
    most = (POSITIONAL[dtype] - 2 ** world_size + 1) // (world_size * 2 ** world_size) + 1
    return -(-numel // most)


def _fill(t, rank, world_size, first, block=1):
    """Fill `t` (in place, keeping its layout) for the probe; positional if `first` is not
    None (element j holds 2**rank + ((first + j) // block) * 2**world_size)."""
    if first is None:
        return t.fill_(2 ** rank)
    where = torch.arange(first, first + t.numel(), dtype=torch.float64).reshape(t.shape)
    return t.copy_(2 ** rank + torch.div(where, block, rounding_mode="floor") * 2 ** world_size)


def probe_args(args: tuple, world_size: int, rank: int, positional=False):
    """The call's arguments with the data (the first argument) holding 2**rank everywhere
    (or, `positional`, the positional probe above): a tensor replaced by a contiguous one of
    its shape, a model by a copy whose gradients hold it. None where the probe says
    nothing: one rank, fewer elements than ranks, or a dtype that cannot hold every sum
    exactly. A model's
    gradients are positional where they can be (not a non-contiguous one, whose order a
    body may read either way); the others hold 2**rank."""
    if world_size < 2 or not args:
        return None
    data = args[0]
    if isinstance(data, torch.nn.Module):
        model = copy_args(data)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if not grads or not all(_holds_sums(g.dtype, world_size) for g in grads):
            return None
        firsts = _layout(grads, world_size) if positional else [None] * len(grads)
        for g, first in zip(grads, firsts):     # in place: each gradient keeps its layout
            _fill(g, rank, world_size, first)
        return (model, *args[1:]) if any(f is not None for f in firsts) or not positional \
            else None
    # Fewer elements than ranks: which rank's chunk is empty depends on how the body cuts
    # the tensor, and a probe of another shape would grade a call the reader never made.
    if not isinstance(data, torch.Tensor) or not _holds_sums(data.dtype, world_size) or \
            data.numel() < world_size:
        return None
    shape = data.shape
    if positional and data.dtype not in POSITIONAL:
        return None
    probe = torch.empty(shape, dtype=data.dtype)
    block = _block(data.dtype, torch.Size(shape).numel(), world_size) if positional else 1
    return (_fill(probe, rank, world_size, 0 if positional else None, block), *args[1:])


def _layout(grads, world_size) -> list:
    """Where each gradient's positions start on the positional probe (j counts on through
    the gradients), or None for one that holds 2**rank everywhere: a non-contiguous one,
    whose order a body may read either way."""
    total, first, firsts = sum(g.numel() for g in grads), 0, []
    for g in grads:
        where = g.is_contiguous() and _fits(g.dtype, total, world_size)
        firsts.append(first if where else None)
        first += g.numel()
    return firsts


def pieces(args, world_size) -> tuple[tuple, int]:
    """For a model on the positional probe: where each positional gradient starts (a message
    may hold pieces of several, packed in any order: one descent between two pieces), and
    how many non-contiguous gradients hold 2**rank everywhere beside them (they may sit
    anywhere in a message of their dtype)."""
    data = args[0] if args else None
    if not isinstance(data, torch.nn.Module):
        return (), 0
    grads = [p.grad for p in data.parameters() if p.grad is not None]
    if not grads or not all(_holds_sums(g.dtype, world_size) for g in grads):
        return (), 0
    firsts, total = _layout(grads, world_size), sum(g.numel() for g in grads)
    # Those that hold 2**rank because the dtype cannot hold positions (float16) travel in
    # messages of their own dtype, where every value is the same sum: no descent.
    return tuple(f for f in firsts if f is not None), \
        sum(f is None and _fits(g.dtype, total, world_size) for g, f in zip(grads, firsts))


def shuffled_problems(mine, reference, loose=0) -> list[str]:
    """On the positional probe: every message keeps the tensor's order, as the reference's
    do: one descent between two pieces of different gradients (a model's gradients may be
    packed in any order), `loose` more for gradients the probe cannot place, and as many
    more as the reference's messages have beyond their own pieces."""
    rank = dist.get_rank()
    loose += max((op.descents - op.pieces + 1 for op in reference if op.kind == "send"),
                 default=0)
    loose = max(loose, 0)
    for op in mine:
        if op.kind == "send" and op.encoded:
            return [f"rank {rank} sent rank {op.peer} {op.encoded} value(s) that add up no "
                    f"rank's data, {_probe_words(dist.get_world_size(), True)}: the method "
                    f"sends running sums, not a value worked out from them (a difference "
                    f"from another element, an encoding)"]
        if op.kind == "send" and op.descents > loose + op.pieces - 1:
            return [f"rank {rank} sent rank {op.peer} a message whose elements are out of the "
                    f"tensor's order ({_probe_words(dist.get_world_size(), True)}): send the "
                    f"running sums themselves, slices of the tensor as they are, not "
                    f"reversed, permuted or encoded"]
    return []


def _sent(ops, peer) -> list[tuple]:
    """[(value, dtype)] of what this rank sent `peer`; (None, dtype): a message held more
    distinct values than the record notes. Zeros are left out: the sum of no rank, the
    padding of a tensor cut into equal chunks (Horovod's)."""
    return [(v, op.dtype) for op in ops if op.kind == "send" and op.peer == peer
            for v in op.values if v != 0]


def _close(got, dtype, want, world_size) -> bool:
    """Equal within the rounding of `world_size` additions in `dtype` (exact for integers)."""
    kind = getattr(torch, dtype, torch.float64)
    if not kind.is_floating_point:
        return got == want
    return abs(got - want) <= 2 * world_size * torch.finfo(kind).eps * abs(want)


def _matches(got, expected, scale, world_size) -> bool:
    """Every value sent is one of the reference's (times `scale`), and every one of the
    reference's is sent."""
    if any(v is None for v, _ in got):
        return False
    wanted = [(v * scale, d) for v, d in expected if v is not None]
    return all(any(_close(v, d, w, world_size) for w, _ in wanted) for v, d in got) and \
        all(any(_close(v, d, w, world_size) for v, _ in got) for w, d in wanted)


def _named(values, world_size) -> str:
    """Each value, and the ranks it adds up where it is such a sum: "7 (ranks 0+1+2)"."""
    values = sorted({v for v, _ in values if v is not None})
    shown = []
    for v in values[:6]:
        if float(v).is_integer() and 0 < v < 2 ** world_size:
            ranks = "+".join(str(r) for r in range(world_size) if int(v) >> r & 1)
            shown.append(f"{v:g} (rank{'s' if '+' in ranks else ''} {ranks})")
        else:
            shown.append(f"{v:g}")
    return ", ".join(shown) + (", ..." if len(values) > 6 else "")


def _probe_words(world_size, positional) -> str:
    """The call the grader made to see the sums: the reader's own shape and dtype, other
    values."""
    said = ("when the grader called it again with the same shape and dtype, on values that "
            "tell the ranks apart (rank 0 holds 1, rank 1 holds 2, rank 2 holds 4, ...: every "
            "sum shows which ranks it adds up")
    return said + (", and each element's place in the tensor)" if positional else ")")


def _subsets_problems(mine, method, rank, world_size, positional) -> list[str]:
    """sums="subsets" (recursive doubling, halving-doubling: which partner comes first is
    free, so which sum goes to which peer is too, and how many ranks each adds up where
    extra ranks fold in): every value sent adds up a set of ranks that holds the sender and,
    unless it is the finished sum (all ranks), not the receiver: a partner's data is added
    where it lives, never sent back to it."""
    everyone = 2 ** world_size - 1
    for op in (op for op in mine if op.kind == "send"):
        for v in op.values:
            if v is not None and (v == 0 or (
                    float(v).is_integer() and 0 < v <= everyone and int(v) >> rank & 1 and
                    (v == everyone or op.peer is None or not int(v) >> op.peer & 1))):
                continue
            return [f"rank {rank} sent rank {op.peer} other values than the method's partial "
                    f"sums: {_probe_words(world_size, positional)}, a message held "
                    f"{_named([(v, op.dtype)], world_size) or 'many values'}; each message of "
                    f"the method adds up rank {rank}'s own data and other ranks' (not rank "
                    f"{op.peer}'s, until the sum is finished) "
                    f"({_why(method, rank, world_size)}). Send the running sums themselves, "
                    f"not a value worked out from them (negated, encoded, a difference from an "
                    f"earlier call)"]
    return []


def sums_problems(mine, reference, method, positional=False) -> list[str]:
    """This rank's sends on the probe against the reference's, peer by peer."""
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if method.sums == "subsets":
        return _subsets_problems(mine, method, rank, world_size, positional)
    scales = (1.0, 1.0 / world_size) if method.sums == "mean" else (1.0,)
    peers = sorted({op.peer for op in mine + reference
                    if op.kind == "send" and op.values and op.peer is not None})
    for peer in peers:
        got, expected = _sent(mine, peer), _sent(reference, peer)
        if any(_matches(got, expected, scale, world_size) for scale in scales):
            continue
        held = _named(got, world_size) + (" and many more values" if
                                           any(v is None for v, _ in got) else "")
        divided = (" (or each divided by the world size, if you divide before adding)"
                   if len(scales) > 1 else "")
        return [f"rank {rank} sent rank {peer} other values than the method's partial sums: "
                f"{_probe_words(world_size, positional)} (so that each sum names the ranks it adds "
                f"up), its messages to rank {peer} held {held or 'nothing'}; the "
                f"method sends {_named(expected, world_size) or 'nothing'} there{divided} "
                f"({_why(method, rank, world_size)}). Send the running sums themselves, not a "
                f"value worked out from them (negated, encoded, a difference from an earlier "
                f"call) nor inputs to add up later"]
    return []
