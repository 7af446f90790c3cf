"""The tests' view of the OS's processes (read from /proc), and proof that none is left.

Tests check the operating system, not our own handles: a worker the launcher believes
stopped must really be gone.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    """One line of /proc/<pid>/stat, the fields the tests use."""

    ppid: int
    pgid: int
    state: str      # "R", "S", ... "Z" for a zombie (exited, not yet reaped)
    start: str      # start time in clock ticks: tells a reused pid apart


def read(pid: int) -> Proc | None:
    """The process `pid`, or None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()   # the name may hold spaces
    except OSError:
        return None
    return Proc(ppid=int(fields[1]), pgid=int(fields[2]), state=fields[0], start=fields[19])


def table() -> dict[int, Proc]:
    """Every process on the machine."""
    procs = {int(e): read(int(e)) for e in os.listdir("/proc") if e.isdigit()}
    return {pid: p for pid, p in procs.items() if p is not None}


def alive(pid: int) -> bool:
    """True if `pid` exists and is not a zombie."""
    if os.path.isdir("/proc/self"):
        p = read(pid)
        return p is not None and p.state != "Z"
    try:                                   # no /proc (macOS): ask the kernel
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def descendants(pid: int) -> dict[int, str]:
    """Living descendants of `pid`: pid -> start time."""
    procs = table()
    children: dict[int, list[int]] = {}
    for p, info in procs.items():
        children.setdefault(info.ppid, []).append(p)
    found, todo = {}, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        if procs[p].state != "Z":
            found[p] = procs[p].start
        todo.extend(children.get(p, []))
    return found


def group_members(pgid: int) -> list[int]:
    """Living processes whose process group is `pgid`."""
    return [pid for pid, p in table().items() if p.pgid == pgid and p.state != "Z"]


def still_alive(tracked: dict[int, str]) -> list[int]:
    """Which of `tracked` (pid -> start time) still run: the same processes, not reused pids."""
    procs = table()
    return [p for p, start in tracked.items()
            if p in procs and procs[p].start == start and procs[p].state != "Z"]


def kill_leftovers(pids, seconds: float = 5.0) -> list[int]:
    """Give `pids` `seconds` to exit; SIGKILL the ones still there and return them."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


# If pytest itself is killed (a CI timeout, ^C twice), its teardown never runs; children
# that live in a session of their own would then outlive it. On Linux they get SIGKILL
# when this process dies instead (PR_SET_PDEATHSIG); elsewhere this does nothing.
try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _PRCTL = None


def die_with(parent: int):
    """A preexec_fn (runs in the child between fork and exec): die with `parent`."""
    def preexec():
        if _PRCTL is not None:
            _PRCTL(1, signal.SIGKILL)       # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:      # it died before prctl took effect
                os._exit(1)
    return preexec
