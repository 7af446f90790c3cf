"""Data may travel only through the process group while a body is graded.

The record sees every op that reaches the process group; data that takes another road
(the rendezvous store, a file, a socket, shared memory, a child process) it cannot see, and
a body that runs the method on dummy data and takes its answer that way would match the
reference's communication exactly. So while the body under test runs, those roads are
closed: a Python call to a store's methods from outside torch, and (through an audit hook,
PEP 578) opening a file for writing, a socket, a shared-memory map, a subprocess, C code
looked up through ctypes. Reading files stays allowed (imports, linecache), and so does
what the harness does itself. (C functions found through ctypes before grading, then
called, raise no audit event: that road stays open.)

    with closed_roads() as used:     # used: list[str], one line per road the body took
        body(...)
"""
from __future__ import annotations

import contextlib
import os
import sys
import sysconfig

import torch
import torch._C._distributed_c10d as c10d_C

_TORCH = os.path.dirname(torch.__file__) + os.sep
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
_HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND
_STORE_METHODS = ("set", "get", "add", "append", "compare_set", "multi_get", "multi_set",
                  "wait", "delete_key", "check", "num_keys", "list_keys", "queue_push",
                  "queue_pop", "queue_len")

_USED: list[list[str]] = []          # one list per open `closed_roads()` block
_installed = False


class SideChannel(PermissionError):
    """The body moved data outside the process group while it was graded."""


def _took(road: str) -> None:
    line = (f"{road}: while graded, data travels only through the process group "
            f"(send/recv, isend/irecv, batch_isend_irecv), where the record sees it")
    for used in _USED:
        used.append(line)
    raise SideChannel(line)


def by_the_machinery() -> bool:
    """Was it Python's import system, or the course's harness, rather than the body? The
    first frame outside the standard library and torch decides (torch.save in a body is
    the body's road, not torch's)."""
    frame, decided = sys._getframe(2), None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib"):
            return True
        if decided is None and not name.startswith((_STDLIB, _TORCH)):
            decided = name.startswith(_HARNESS)
        frame = frame.f_back
    return decided is None or decided


_C10D = os.path.join(_TORCH, "distributed", "distributed_c10d.py")


def _process_group_bookkeeping() -> bool:
    """torch's own process-group code (new_group, a barrier) keeps its state in the store;
    any other caller (the body, or a torch helper it called) moves data through it."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == _C10D:
            return True
        frame = frame.f_back
    return False


def _audit(event: str, args) -> None:
    if not _USED:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
            (mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes and not by_the_machinery():
            _took(f"opened {path!r} for writing")
    elif event in ("os.mkdir", "os.mkfifo", "os.link", "os.symlink"):
        if not by_the_machinery():
            _took(f"made {args[0]!r} ({event})")
    elif event in ("socket.__new__", "socket.connect", "socket.bind"):
        if not by_the_machinery():
            _took(f"used a socket ({event})")
    elif event == "mmap.__new__" and args[0] != -1:
        if not by_the_machinery():
            _took("mapped shared memory (mmap of a file or shared_memory)")
    elif event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork"):
        if not by_the_machinery():
            _took(f"started a process ({event})")
    elif event in ("ctypes.dlopen", "ctypes.dlsym"):    # C code (fopen, write, ...) found.
        if not by_the_machinery():                      # Its calls raise no audit event:
            _took(f"looked up C code through ctypes ({event})")   # set up at import, unseen


def _guarded(name, original):
    def method(self, *args, **kwargs):
        if _USED and not _process_group_bookkeeping() and not by_the_machinery():
            _took(f"called the rendezvous store's {name}()")
        return original(self, *args, **kwargs)
    method.__name__ = name
    return method


def _guarded_file_writer(name, original):
    """torch's own file writers open their files in C++, where no audit event is raised."""
    def writer(*args, **kwargs):
        if _USED and not sys._getframe(1).f_code.co_filename.startswith((_TORCH, _HARNESS)):
            _took(f"called {name}() (a file)")
        return original(*args, **kwargs)
    writer.__name__ = name
    return writer


def install() -> None:
    """The audit hook and the store's guards (idempotent; free while no block is open)."""
    global _installed
    if _installed:
        return
    _installed = True
    sys.addaudithook(_audit)
    for name in _STORE_METHODS:
        original = getattr(c10d_C.Store, name, None)
        if original is not None:
            setattr(c10d_C.Store, name, _guarded(name, original))
    torch.save = _guarded_file_writer("torch.save", torch.save)
    torch.from_file = _guarded_file_writer("torch.from_file", torch.from_file)
    torch.UntypedStorage.from_file = staticmethod(_guarded_file_writer(
        "UntypedStorage.from_file", torch.UntypedStorage.from_file))


@contextlib.contextmanager
def closed_roads():
    """`with closed_roads() as used:` every road other than the process group the block
    took (each also raised SideChannel where it was taken)."""
    install()
    used: list[str] = []
    _USED.append(used)
    try:
        yield used
    finally:
        _USED.remove(used)
