"""Who made a call: the first frame of the reader's code, and code a graded body may not
communicate through.

`caller()` walks the stack from the dispatcher outwards, past torch, the standard library
and the course's machinery, to the file:line the record and the doctor show; `frames()` gives
the reader's frames from there outwards, each with its call site, as a traceback does.
`forbidding(codes, prefixes, below)` marks, while a body is graded, the code it must not
borrow (the reference, the course's own implementations): `borrowed()` names the first
such frame of the current call.
"""
from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import traceback
from dataclasses import dataclass

import torch

_TORCH = os.path.dirname(torch.__file__) + os.sep
_LABS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Frames that are never "the caller": torch, the standard library, the course's machinery.
_NOT_CALLERS = (_TORCH, sysconfig.get_paths()["stdlib"] + os.sep,
                os.path.join(_LABS, "harness") + os.sep, os.path.join(_LABS, "doctor") + os.sep)
_WRAPPERS = frozenset({"wrapper", "inner", "_fn", "decorate_context"})


def caller() -> tuple[str, str]:
    """(file:line of the first frame outside torch, the standard library and the course's
    machinery, the torch.distributed function it called)."""
    frame, api = sys._getframe(1), ""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_NOT_CALLERS) and not name.startswith("<"):
            return f"{name}:{frame.f_lineno}", api
        if name.startswith(_TORCH) and frame.f_code.co_name not in _WRAPPERS:
            api = frame.f_code.co_name
        frame = frame.f_back
    return "", api


@dataclass(frozen=True)
class Frame:
    """One frame of the reader's code: the line it is at, in which function."""

    file: str
    line: int
    function: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _mine(name: str) -> bool:
    return not name.startswith(_NOT_CALLERS) and not name.startswith("<")


def frames(limit: int = 12) -> list[Frame]:
    """The reader's own frames of the current call, innermost first (the first is where
    `caller()` points; each next one is the line that called the function before it), at
    most `limit`; torch's, the standard library's and the course's frames left out."""
    frame, out = sys._getframe(1), []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        if _mine(code.co_filename):
            out.append(Frame(code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return out


def frames_of(error: BaseException, limit: int = 12) -> list[Frame]:
    """The reader's frames of an exception's traceback, innermost first."""
    mine = [Frame(f.filename, f.lineno, f.name) for f in traceback.extract_tb(error.__traceback__)
            if _mine(f.filename)]
    return mine[::-1][:limit]


def by_the_body(depth: int) -> bool:
    """Is the first frame above `depth` (past torch and the standard library) the body's,
    not the course's machinery's?"""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename.startswith(_NOT_CALLERS[:2]):
        frame = frame.f_back
    return frame is not None and not frame.f_code.co_filename.startswith(_NOT_CALLERS[2:])


# Code a graded body must not communicate through (graded.py sets it while the body runs):
# the exercise's reference, and the course's own implementations of the lessons' methods.
_FORBIDDEN: list = []                 # (code objects, path prefixes), innermost last


@contextlib.contextmanager
def forbidding(codes, prefixes, below):
    """`with forbidding(codes, prefixes, below=frame):` every op records, in `borrowed`, the
    first frame of its call stack under `below` (the frame that calls the body) that runs one
    of `codes` or a file under one of `prefixes`. Frames from `below` up are the grader's,
    which may call the body from the course's own driver (lesson 09's 1F1B step)."""
    # code ids: code objects compare equal across files (their file is not compared), and
    # this runs at every op
    _FORBIDDEN.append((frozenset(map(id, codes)), tuple(prefixes), below))
    try:
        yield
    finally:
        _FORBIDDEN.pop()


def borrowed() -> str:
    if not _FORBIDDEN:
        return ""
    code_ids, prefixes, below = _FORBIDDEN[-1]
    frame = sys._getframe(1)
    while frame is not None and frame is not below:
        code = frame.f_code
        if id(code) in code_ids or code.co_filename.startswith(prefixes):
            path = os.path.relpath(code.co_filename, os.path.dirname(_LABS))
            return f"{path}:{frame.f_lineno} ({code.co_name})"
        frame = frame.f_back
    return ""
