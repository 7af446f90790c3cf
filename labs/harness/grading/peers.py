"""A peer that is not a rank of the group, said before the call reaches gloo.

gloo does not refuse one: a receive from rank -1 (a peer computed as `rank - 1` without
`% world_size`) waits until the timeout, a send or receive with rank `world_size` crashes
the process (SIGSEGV). While a body is graded, every point-to-point call is looked at
before it runs (record.listen's "call" event), and such a call fails at once with the fix.
"""
from __future__ import annotations

import os

import torch.distributed as dist

from labs.harness import COURSE_ROOT
from labs.harness.grading.run import GradeFailure


def refuse_non_ranks(event: str, op, **info) -> None:
    """A record listener: raise GradeFailure on a send or receive to a peer outside 0..p-1."""
    if event != "call" or op.kind not in ("send", "recv") or op.peer is None:
        return
    p = dist.get_world_size()
    if not 0 <= op.peer < p:
        way = "send to" if op.kind == "send" else "recv from"
        where = _relative(op.where)
        raise GradeFailure(f"{where + ': ' if where else ''}rank {dist.get_rank()} called "
                           f"{way} rank {op.peer}: not a rank of this group (0..{p - 1}): "
                           f"compute the peer with % {p}")


def _relative(where: str) -> str:
    """'labs/deadlocks.py:207' for a file of the course, else as it is."""
    root = str(COURSE_ROOT) + os.sep
    return where.removeprefix(root)
