"""A process's own threads, read from /proc/self/task: their names, and gloo's.

A thread can end between the listing of /proc/self/task and the read of its `comm` (its
folder is gone by then): it is simply not counted. Python's threading module does not list
threads that C++ started, such as gloo's.
"""
from __future__ import annotations

import os

GLOO_GROUP_THREAD = "pt_gloo_runloop"    # a gloo process group's worker thread (its name)


def thread_names() -> list[str]:
    """The names of this process's threads that are alive (as `ps -L` shows them)."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().rstrip("\n"))
        except OSError:          # FileNotFoundError, ProcessLookupError: it ended meanwhile
            continue
    return names


def gloo_group_threads() -> int:
    """gloo process groups' worker threads in this process: they end when their group is
    freed. (A Work still held keeps only gloo's transport thread.)"""
    return sum(name.startswith(GLOO_GROUP_THREAD) for name in thread_names())
