"""The process table, read from /proc: who is alive and who started whom."""
from __future__ import annotations

import contextlib
import os


def parents() -> dict[int, int]:
    """pid -> parent pid of every living process (zombies left out)."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            with open(f"/proc/{entry}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            if state != "Z":
                found[int(entry)] = int(ppid)
    return found


def descendants(root: int) -> set[int]:
    """`root` and every living process below it."""
    parent, tree, grew = parents(), {root}, True
    while grew:
        below = {pid for pid, ppid in parent.items() if ppid in tree} - tree
        tree, grew = tree | below, bool(below)
    return tree
