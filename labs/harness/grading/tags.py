"""`with ignoring_tags():` the record sends every point-to-point op to gloo with tag 0.

Sends and receives between two ranks then pair by their order alone, as on NCCL, which
ignores tags (lesson 02). The record (record.py) rewrites each op's arguments with
`untagged()` while `TAGLESS` is non-empty.
"""
from __future__ import annotations

import contextlib

TAGLESS: list[bool] = []              # ignoring_tags() is on (nested: one entry per block)

# Where each point-to-point op of c10d / _c10d_functional carries its tag (ops.py's schemas)
_TAG_AT = {"send": 3, "recv_": 3, "recv_any_source_": 2, "isend": 2, "irecv": 2}


@contextlib.contextmanager
def ignoring_tags():
    """`with ignoring_tags():` every point-to-point op recorded in the block reaches gloo
    with tag 0: sends and receives between two ranks then pair by their order alone, as on
    NCCL, which ignores tags (lesson 02). A body that tells messages apart by tags only
    gets other data here, as it would on NCCL."""
    TAGLESS.append(True)
    try:
        yield
    finally:
        TAGLESS.pop()


def untagged(name, args):
    """`args` of the c10d op `name` with the op's tag(s) 0."""
    if name in _TAG_AT and len(args) > _TAG_AT[name]:
        at = _TAG_AT[name]
        return (*args[:at], 0, *args[at + 1:])
    if name == "batch_p2p_ops" and len(args) > 2:     # (ops, peers, tags, tensors, group)
        return (*args[:2], [0] * len(args[2]), *args[3:])
    return args
