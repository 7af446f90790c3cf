"""Round 13 (ours): partial sums on the wire in another layout than the tensor's. A ring whose
chunks travel rotated or interleaved sends what the method does not (wrong); a flat gradient
buffer whose gradients are packed in another order, each keeping its elements' order, is
right (DDP packs them in reverse).

(Lesson `ring`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red13_layout.py.)
"""
import torch

from tests.graders.bodies.ring.red12_b import _contiguous_chunks, _ring
from tests.graders.bodies._shared import deinterleave as _deinterleave, interleave as _interleave


# WRONG: every chunk travels rotated by one element, and is rotated back on arrival.
def ar_rotated_wire(tensor):
    return _ring(tensor, _contiguous_chunks, enc=lambda x: torch.roll(x, 1).contiguous(),
                 dec=lambda m: torch.roll(m, -1))


# WRONG: every chunk travels as its even elements, then its odd ones.
def ar_interleaved_wire(tensor):
    return _ring(tensor, _contiguous_chunks, enc=_interleave, dec=_deinterleave)


def _big_f32(x):
    return x.dtype == torch.float32 and x.numel() > 2048


# WRONG: partial sums delta-encoded on the wire, only for large float32 chunks (where the
# positions of a positional probe would not fit float32's 24 bits).
def ar_delta_encoded_when_large(tensor):
    def enc(x):
        if not _big_f32(x):
            return x.contiguous().clone()
        out = x - x[0]
        out[0] = x[0]
        return out

    def dec(m):
        if not _big_f32(m):
            return m
        out = m + m[0]
        out[0] = m[0]
        return out
    return _ring(tensor, _contiguous_chunks, enc=enc, dec=dec)


# WRONG: large float32 chunks travel reversed.
def ar_flipped_when_large(tensor):
    return _ring(tensor, _contiguous_chunks,
                 enc=lambda x: x.flip(0).contiguous() if _big_f32(x) else x.contiguous(),
                 dec=lambda m: m.flip(0) if _big_f32(m) else m)


# WRONG: bfloat16 chunks travel reversed (the only dtype with a large case besides float32).
def ar_flipped_bf16(tensor):
    def half(x):
        return x.dtype == torch.bfloat16 and x.numel() > 1
    return _ring(tensor, _contiguous_chunks,
                 enc=lambda x: x.flip(0).contiguous() if half(x) else x.contiguous(),
                 dec=lambda m: m.flip(0) if half(m) else m)
