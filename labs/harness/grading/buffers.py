"""What a message holds and whose memory it is: the record's helpers for buffers.

`digest(tensors)` hashes the bytes a send carries (compared with the reference's where the
contract fixes what travels); `overlap(a, b)` says whether two tensors share bytes;
`read_only(lent)` names the memory a receive may not write while a body is graded.
"""
from __future__ import annotations

import contextlib
import hashlib

import torch

DIGESTS: list = []        # last True: the record hashes what each send holds (Op.digest)
READ_ONLY: list = []      # [(name, tensor)] a receive may not write (Op.into)


def _tensors(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors(item)]
    return []


def digest(tensors) -> str:
    """A short hash of the bytes `tensors` hold (what a message carries)."""
    h = hashlib.blake2b(digest_size=8)
    for t in _tensors(tensors):
        flat = t.detach().reshape(-1)
        if flat.stride(0) != 1:      # one element, or none: any stride counts as contiguous
            flat = torch.empty_like(flat, memory_format=torch.contiguous_format).copy_(flat)
        h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two tensors use some of the same bytes? (Views of one buffer side by side do not.)"""
    if not (a.numel() and b.numel()) or \
            a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def span(t):
        first = t.storage_offset() * t.element_size()
        last = first + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) * t.element_size()
        return first, last + t.element_size()
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


@contextlib.contextmanager
def read_only(lent):
    """`with read_only([(name, tensor), ...]):` a receive whose buffer overlaps one of them
    says so (Op.into): writes through `.data` or numpy bump no version counter."""
    READ_ONLY.append(lent)
    try:
        yield
    finally:
        READ_ONLY.pop()
