"""Code a graded body may not name: torch's switches that take a call out of the record's
sight (dispatch modes or torch-function subclasses turned off, torch's C bindings reached
directly), and the course's own grading machinery (a body that patches its checks grades
itself). Read from the body's code before it runs, with the code of the functions of its
own file it calls, so a helper does not hide them either.

    problems = private_names(body)     # [] or one sentence per name
"""
from __future__ import annotations

import os
import types

_HIDING = {
    "_C": "torch._C (torch's C bindings, where calls skip the record)",
    "_python_dispatch": "torch.utils._python_dispatch (it turns the record's mode off)",
    "_disable_current_modes": "_disable_current_modes (it turns the record's mode off)",
    "_pop_mode": "_pop_mode (it takes the record's mode off the stack)",
    "_pop_mode_temporarily": "_pop_mode_temporarily (it takes the record's mode off)",
    "DisableTorchFunction": "DisableTorchFunction (it hides compute from the grader)",
    "DisableTorchFunctionSubclass": "DisableTorchFunctionSubclass (it hides compute from the "
                                    "grader)",
    "_VariableFunctions": "torch._VariableFunctions (torch's C functions, unguarded)",
    "_DisableTorchDispatch": "_DisableTorchDispatch (it turns the record's mode off)",
    "_make_subclass": "Tensor._make_subclass (an alias the grader's watch does not see)",
}
_MACHINERY = ("labs.harness.grading", "tests.graders.test_")   # borrowing solutions/: callers.py


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _same_file(a: types.CodeType, b: types.CodeType) -> bool:
    return os.path.exists(a.co_filename) and os.path.exists(b.co_filename) and \
        os.path.samefile(a.co_filename, b.co_filename)


def _own_functions(fn, seen: set):
    """fn and, through the names its code uses, the functions of its own file it calls."""
    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    yield fn
    for c in _codes(code):
        for name in c.co_names:
            other = fn.__globals__.get(name)
            if isinstance(other, types.FunctionType) and _same_file(other.__code__, code):
                yield from _own_functions(other, seen)


def private_names(body) -> list[str]:
    """One sentence per private name the body's code (or a helper of its file) uses."""
    body = getattr(body, "__wrapped__", body)
    found: dict[str, str] = {}
    for fn in _own_functions(body, set()):
        where = f"{fn.__name__} ({os.path.basename(fn.__code__.co_filename)})"
        for c in _codes(fn.__code__):
            for name in c.co_names:
                module = fn.__globals__.get(name)
                machinery = name.startswith(_MACHINERY) or (
                    isinstance(module, types.ModuleType) and module.__name__.startswith(_MACHINERY))
                if name in _HIDING:
                    found.setdefault(name, f"{where} uses {_HIDING[name]}")
                elif machinery:
                    found.setdefault(name, f"{where} uses the course's grading machinery "
                                           f"({getattr(module, '__name__', name)})")
    return [f"{line}: a graded body uses torch's public API only, and never the "
            f"machinery that grades it" for line in found.values()]
