"""What a message holds and whose memory it is: the record's helpers for buffers.

`digest(tensors)` hashes the bytes a send carries (compared with the reference's where the
contract fixes what travels); `distinct(tensors)` lists the values it holds (a reduction's
partial sums, on the probe of labs.harness.grading.sums); `overlap(a, b)` says whether two
tensors share bytes; `read_only(lent)` names the memory a receive may not write while a body is graded.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
from dataclasses import dataclass

import numpy as np
import torch

DIGESTS: list = []        # last True: the record hashes what each send holds (Op.digest)
DISTINCT: list = []       # [Noting]: the record notes the values each send holds (Op.values)
KEPT_VALUES = 16          # at most this many distinct values noted per send
READ_ONLY: list = []      # [Lent]: memory the body may read, not write


@dataclass
class Noting:
    """How the record notes what a send holds on a probe of labs.harness.grading.sums."""

    positions: int = 0        # > 0: the positional probe of that world size (decoded)
    starts: tuple = ()        # a model's: where each gradient's positions start (sums.pieces)


@dataclass
class Lent:
    """The memory a body may only read: (name, tensor, its values at the start) each."""

    tensors: list
    written: str = ""         # "`name` (the op)": the first write to it by a torch op


def changed_lent() -> str:
    """The name of the first lent tensor that holds other values than at the start (a
    write that no torch op made: numpy)."""
    with torch._C.DisableTorchFunctionSubclass():
        return next((name for name, t, then in READ_ONLY[-1].tensors
                     if not same_bytes(t, then)), "")


def note_writes(func, args, kwargs) -> None:
    """A torch op that writes lent memory (`p.data.copy_`, `t.data.add_`: no version
    counter sees them) is noted in the Lent, whatever it writes and whether or not it is put
    back later."""
    lent = READ_ONLY[-1] if READ_ONLY else None
    if lent is None or lent.written or not func._schema.is_mutable:
        return
    for i, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[i] if i < len(args) else (kwargs or {}).get(argument.name)
        for t in _tensors(value):
            name = next((name for name, mine, _ in lent.tensors if overlap(t, mine)), "")
            if name:
                lent.written = f"{name} ({func._opname})"
                return


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors(item)]
    return []


def digest(tensors) -> str:
    """A short hash of the bytes `tensors` hold (what a message carries)."""
    h = hashlib.blake2b(digest_size=8)
    with torch._C.DisableTorchFunctionSubclass():     # a watched weight's bytes too
        for t in _tensors(tensors):
            h.update(_flat_bytes(t).numpy().tobytes())
    return h.hexdigest()


SAMPLE = 4096     # smallest_distinct: elements looked at first, to bound what is sorted


def smallest_distinct(x: torch.Tensor, k: int) -> list:
    """The k smallest distinct values of the 1-d float tensor `x`, ascending (NaNs last, each
    its own value): torch.unique(x).tolist()[:k] without sorting all of x (the record notes
    every send of a probe: a full sort of a 4 MiB message costs ~40 ms, this ~2 ms)."""
    if x.numel() <= 4 * SAMPLE:
        return torch.unique(x).tolist()[:k]
    nans = int(torch.isnan(x).sum())
    if nans:
        x = x[~torch.isnan(x)]
    seen = torch.unique(x[:SAMPLE])
    if seen.numel() >= k:            # k distinct values at most seen[k - 1]: only those count
        values = torch.unique(x[x <= seen[k - 1]]).tolist()
    else:                            # few distinct values (a message of partial sums): one pass each
        values, rest = [], x
        while rest.numel() and len(values) < k:
            least = rest.min()
            values.append(least.item())
            rest = rest[rest > least]
    return (values + [float("nan")] * nans)[:k]


def distinct(tensors) -> tuple:
    """The distinct values `tensors` hold, in order, as Python numbers: at most
    KEPT_VALUES of them, then None (more)."""
    with torch._C.DisableTorchFunctionSubclass():
        parts = [t.detach().reshape(-1).to(torch.float64) for t in _tensors(tensors) if t.numel()]
        if not parts:
            return ()
        values = smallest_distinct(torch.cat(parts), KEPT_VALUES + 1)
    return tuple(values[:KEPT_VALUES]) + ((None,) if len(values) > KEPT_VALUES else ())


def decoded(tensors, world_size, starts=()) -> tuple[tuple, int, int, int]:
    """On the positional probe (sums.py: element j of rank r's data holds 2**r + j * 2**p):
    the distinct partial sums a message holds, each element's value mod 2**p (the ranks it
    adds up), an element that adds up no rank kept as it is (an encoded value: it matches no
    sum); its descents: how often an element is smaller than the one before it (zeros, the
    padding, left out; a message cut from the tensor keeps its order: none); how many
    of its elements add up no rank (a partial sum divided by the world size still does);
    and its pieces: how many of a model's gradients (`starts`) its elements come from."""
    with torch._C.DisableTorchFunctionSubclass():
        parts = [t.detach().reshape(-1).to(torch.float64) for t in _tensors(tensors) if t.numel()]
        if not parts:
            return (), 0, 0, 1
        flat = torch.cat(parts)
        flat = flat[flat != 0]
        sums = torch.remainder(flat, 2 ** world_size)
        noted = torch.where(sums == 0, flat, sums)
        values = smallest_distinct(noted, KEPT_VALUES + 1)
        descents, encoded = int((flat[1:] < flat[:-1]).sum()), int((sums == 0).sum())
        count = _pieces(flat, starts) if starts else 1
    kept = tuple(values[:KEPT_VALUES]) + ((None,) if len(values) > KEPT_VALUES else ())
    return kept, descents, encoded, count


def _pieces(flat, starts) -> int:
    """How many of a model's gradients (`starts`: where each one's positions begin) a
    message's elements come from, whatever positive scale the body gave its values (a mean
    may divide by the world size before the ring, in any dtype). An element at position j
    that adds up k ranks (their sum m < 2**p) holds c * (m + k * j * 2**p) for the body's
    scale c (1 where it sends the sums as they are): the elements of one message, which
    add up the same ranks, lie one step c * k * 2**p apart per position, and as
    0 < m < k * 2**p, j = floor(value / step). The step is the median distance between
    neighbours (most neighbours are next to each other in one gradient); scale, rounding
    and the ranks' sum drop out, where decoding each value on its own needs it exact."""
    flat = flat[torch.isfinite(flat)]
    apart = (flat[1:] - flat[:-1]).abs()
    apart = apart[apart > 0]
    if not apart.numel():
        return 1
    where = torch.floor(flat / apart.median())
    at = torch.searchsorted(torch.tensor(starts, dtype=torch.float64), where, right=True)
    return int(at.unique().numel())


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The same values, bit for bit (NaN equals NaN here, unlike torch.equal)."""
    with torch._C.DisableTorchFunctionSubclass():
        if a.shape != b.shape or a.dtype != b.dtype or not (readable(a) and readable(b)):
            return False
        a, b = _flat_bytes(a), _flat_bytes(b)
        # As wide integers where both allow it: torch.equal compares 8-byte words about 8
        # times faster than single bytes (the record checks lent memory at every op).
        for word in (torch.int64, torch.int32, torch.int16):
            if all(t.numel() % word.itemsize == 0 and t.storage_offset() % word.itemsize == 0
                   for t in (a, b)):
                return torch.equal(a.view(word), b.view(word))
        return torch.equal(a, b)


def _flat_bytes(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().reshape(-1)
    if flat.stride(0) != 1:      # one element, or none: any stride counts as contiguous
        flat = torch.empty_like(flat, memory_format=torch.contiguous_format).copy_(flat)
    return flat.view(torch.uint8)


@dataclass(frozen=True)
class ByteRange:
    """The bytes a tensor covers: its storage's address, the byte offset of its first
    element, its sizes and strides (in elements) and its item size. Two views of one
    storage share a byte only if some element of one overlaps some element of the other:
    rows side by side, or interleaved columns, share none."""

    storage: int
    offset: int
    sizes: tuple
    strides: tuple
    itemsize: int

    @property
    def lo(self) -> int:
        return self.offset + sum((n - 1) * s for n, s in zip(self.sizes, self.strides)
                                 if s < 0) * self.itemsize

    @property
    def hi(self) -> int:
        """One past the last byte (the range is [lo, hi) of the storage)."""
        return self.offset + (sum((n - 1) * s for n, s in zip(self.sizes, self.strides)
                                  if s > 0) + 1) * self.itemsize

    @property
    def dense(self) -> bool:
        """Every byte between lo and hi belongs to it (a contiguous tensor, in any order)."""
        numel = 1
        for n in self.sizes:
            numel *= n
        return numel * self.itemsize == self.hi - self.lo

    def overlaps(self, other: "ByteRange") -> bool:
        if self.storage != other.storage or self.hi <= other.lo or other.hi <= self.lo:
            return False
        if self.dense and other.dense:
            return True      # each covers every byte of its span, and the spans meet
        return _strided_overlap(self, other)


MASK_LIMIT = 1 << 26      # bytes: beyond this span, strided ranges are taken as overlapping


@functools.lru_cache(maxsize=1024)
def _strided_overlap(a: ByteRange, b: ByteRange) -> bool:
    """Exact for two strided ranges: mark a's bytes in a mask of the span both cover, look
    for b's (numpy, so that no torch op reaches a dispatch mode watching this one). Ranges
    of one item size on the same alignment are compared per element, not per byte."""
    k = a.itemsize
    if b.itemsize == k and a.offset % k == b.offset % k == 0 and k > 1:
        a, b = (ByteRange(r.storage, r.offset // k, r.sizes, r.strides, 1) for r in (a, b))
    start, end = min(a.lo, b.lo), max(a.hi, b.hi)
    if end - start > MASK_LIMIT:
        return True
    mask = np.zeros(end - start, dtype=np.bool_)
    _bytes_of(mask, a, start)[...] = True
    return bool(_bytes_of(mask, b, start).any())


def _bytes_of(mask, r: ByteRange, start: int):
    """A view of `mask` holding exactly r's bytes (one axis more: each element's bytes)."""
    origin = mask[r.offset - start:]
    return np.lib.stride_tricks.as_strided(
        origin, shape=(*r.sizes, r.itemsize),
        strides=(*(s * r.itemsize for s in r.strides), 1), writeable=True)


def byte_range(t: torch.Tensor) -> ByteRange | None:
    """The bytes `t` covers; None for a tensor with no elements or no storage (a freed
    storage, a meta or functional tensor): it covers none that anyone could race on."""
    with torch._C.DisableTorchFunctionSubclass():
        if not t.numel() or t.layout != torch.strided:
            return None
        try:          # a tensor subclass may have no storage, or no address
            storage = t.untyped_storage()
            address = 0 if storage.device.type == "meta" else storage.data_ptr()
        except (RuntimeError, NotImplementedError, TypeError):
            return None
        if address == 0:
            return None
        itemsize = t.element_size()
        return ByteRange(address, t.storage_offset() * itemsize, tuple(t.shape),
                         tuple(t.stride()), itemsize)


def readable(t: torch.Tensor) -> bool:
    """Does `t`'s storage still hold every byte it covers? (The script may free it:
    `t.untyped_storage().resize_(0)`; reading the tensor then raises.)"""
    with torch._C.DisableTorchFunctionSubclass():
        if not t.numel():
            return True
        r = byte_range(t)
        return r is not None and r.lo >= 0 and r.hi <= t.untyped_storage().nbytes()


def overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two tensors use some of the same bytes? Exact for views: rows side by side, or
    interleaved columns of one matrix, do not overlap."""
    ra, rb = byte_range(a), byte_range(b)
    return ra is not None and rb is not None and ra.overlaps(rb)


@contextlib.contextmanager
def read_only(lent):
    """`with read_only([(name, tensor), ...]):` a receive whose buffer overlaps one of them
    says so (Op.into), and so does any op posted while one of them holds other values than
    at the start (Op.lent_changed): writes through `.data` or numpy bump no version counter,
    and put back before returning they leave no trace, but the memory was not the body's."""
    with torch._C.DisableTorchFunctionSubclass():
        lent = Lent([(name, t, t.detach().clone()) for name, t in lent])
    READ_ONLY.append(lent)
    try:
        yield lent
    finally:
        READ_ONLY.pop()
