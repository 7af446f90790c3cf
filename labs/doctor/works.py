"""The list batch_isend_irecv returns, inside the doctor's ranks: a `Works` that tells the
doctor how the script reads it (NCCL returns one Work per batch: portability.py's
one_work_per_batch judges each read on a one-element list). What the script's code does at
each read is read from its bytecode (dis), at the frame that made the read."""
from __future__ import annotations

import dis
import functools
import sys

from labs.harness.grading import callers


class Works(list):
    """The list batch_isend_irecv returned, telling the doctor how the script reads it. NCCL
    returns ONE Work for the whole batch, so the question for each read is what it would do
    on a one-element list: unpacking into several names, an index other than 0 and -1 that
    is not relative to len() of this list, zip() against another list, or a comparison of
    len() whose answer changes at 1 differ there. A loop over it, works[-1], a slice or
    `for i in range(len(works))` are right on both."""

    def __init__(self, works, batch, emit):
        super().__init__(works)
        self._batch, self._emit = batch, emit
        self._len_read = False            # the script asked len() of this list

    def _tell(self, frame, how: str, index: int = -1) -> None:
        name = frame.f_code.co_filename
        if name.startswith(callers._NOT_CALLERS) or name.startswith("<"):
            return                        # torch or the course reading it, not the script
        self._emit("works", batch=self._batch, index=index, text=how,
                   numel=list.__len__(self), where=f"{name}:{frame.f_lineno}")

    def __iter__(self):
        frame = sys._getframe(1)
        names = _unpacked_into(frame)
        if names > 1:
            self._tell(frame, "unpack", names)
        elif _callee(frame)[0] == "zip":
            self._tell(frame, "zip")
        return super().__iter__()

    def __getitem__(self, index):
        if isinstance(index, int) and index not in (0, -1):
            frame = sys._getframe(1)
            if _constant_index(frame) or not self._len_read:
                self._tell(frame, "index", index)
        return super().__getitem__(index)

    def __len__(self):
        frame = sys._getframe(1)
        if _callee(frame)[0] == "len":    # len(works) in the script, not list(works)
            self._len_read = True
            if _len_compared(frame, list.__len__(self)):
                self._tell(frame, "len")
        return super().__len__()

    def __reduce_ex__(self, protocol):     # pickled or copied: a plain list
        return (list, (list(self),))


@functools.lru_cache(maxsize=256)
def _instructions(code) -> dict:
    ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    return {i.offset: (k, ins) for k, i in enumerate(ins)}


def _at(frame):
    """(k, instructions) of the instruction the frame is executing, or (-1, [])."""
    return _instructions(frame.f_code).get(frame.f_lasti, (-1, []))


def _unpacked_into(frame) -> int:
    """How many elements the unpacking the frame is at needs at least (0: not unpacking)."""
    k, ins = _at(frame)
    if k < 0 or ins[k].opname not in ("UNPACK_SEQUENCE", "UNPACK_EX"):
        return 0
    arg = ins[k].arg
    return arg if ins[k].opname == "UNPACK_SEQUENCE" else (arg & 0xFF) + (arg >> 8)


def _constant_index(frame) -> bool:
    """`works[1]`: the index is a constant in the code, not computed."""
    k, ins = _at(frame)
    return k > 0 and ins[k - 1].opname in ("LOAD_CONST", "LOAD_SMALL_INT")


def _callee(frame, k: int = -1) -> tuple:
    """(name, index of its load) of the builtin the CALL at k (default: the frame's current
    instruction) calls: the load that starts where the call's source span starts."""
    at, ins = _at(frame)
    k = at if k < 0 else k
    if k < 0 or ins[k].opname != "CALL":
        return None, -1
    start = ins[k].positions
    for j in range(k - 1, -1, -1):
        p = ins[j].positions
        if (p.lineno, p.col_offset) == (start.lineno, start.col_offset) \
                and ins[j].opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            return ins[j].argval, j
    return None, -1


_COMPARE = {"<": int.__lt__, "<=": int.__le__, "==": int.__eq__, "!=": int.__ne__,
            ">": int.__gt__, ">=": int.__ge__}


def _len_compared(frame, n: int) -> bool:
    """Does the script compare this len() with a constant whose answer differs at 1 and at
    n (`len(works) > 1`, `== 2`), or with another len() (`len(works) == len(ops)`)?"""
    k, ins = _at(frame)
    j = _callee(frame)[1]
    after = ins[k + 1:k + 3]
    if len(after) == 2 and after[0].opname == "LOAD_CONST" and after[1].opname == "COMPARE_OP":
        c, how = after[0].argval, _COMPARE.get(after[1].argrepr)
        return isinstance(c, int) and how is not None and how(n, c) != how(1, c)
    j -= int(j > 0 and ins[j - 1].opname == "PUSH_NULL")      # module-level code
    if k + 1 < len(ins) and ins[k + 1].opname == "COMPARE_OP" and j > 0:
        left, how = ins[j - 1], _COMPARE.get(ins[k + 1].argrepr)
        if left.opname == "LOAD_CONST" and isinstance(left.argval, int) and how is not None:
            return how(left.argval, n) != how(left.argval, 1)
        return left.opname == "CALL" and _callee(frame, j - 1)[0] == "len"
    return _other_len_follows(ins, k)


def _other_len_follows(ins, k: int) -> bool:
    """`len(works) == len(ops)`: after this call, a len() call and then the comparison."""
    rest = ins[k + 1:k + 8]
    names = [i.argval for i in rest if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    ops = [i.opname for i in rest]
    return bool(names) and names[0] == "len" and "COMPARE_OP" in ops
