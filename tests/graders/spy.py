"""`spying(functions, note)`: every call of these function objects is noted, however the
caller reached them (any name, a default argument, an object holding one).

Each function's code is swapped, for the block, for one that calls `note(original, *args,
**kwargs)`, which calls the original: every reference to the function object runs it. A trace
hook (sys.settrace) would see the calls too, but it runs at every Python call the process
makes: about a third of a gradient grader's time.
"""
from __future__ import annotations

import contextlib
import functools
import types

SPY_NAME = "__graders_spy_"      # + index: the global the swapped code calls (in its module)
SPY_FILE = "<grader's call counter>"    # "<...>": a traceback's reader is told it is not theirs


def _spy_code(function, spy_name):
    """A code object with `function`'s free variables that returns spy_name(*args, **kwargs)."""
    free = function.__code__.co_freevars       # a closure's cells must fit the new code
    source = (f"def outer({', '.join(free)}):\n"
              f"    def {function.__code__.co_name}(*args, **kwargs):\n"
              f"        {', '.join(free) or 'pass'}\n"
              f"        return {spy_name}(*args, **kwargs)\n"
              f"    return {function.__code__.co_name}\n")
    namespace = {}
    exec(compile(source, SPY_FILE, "exec"), namespace)
    return namespace["outer"](*[None] * len(free)).__code__


@contextlib.contextmanager
def spying(functions, note):
    """Within the block, a call of any of `functions` runs note(original, *args, **kwargs)
    instead, where `original` is a copy of the function that runs its own code."""
    swapped = []
    try:
        for i, function in enumerate(functions):
            code, spy_name = function.__code__, f"{SPY_NAME}{i}"
            original = types.FunctionType(code, function.__globals__, function.__name__,
                                          function.__defaults__, function.__closure__)
            original.__kwdefaults__ = function.__kwdefaults__
            function.__globals__[spy_name] = functools.partial(note, original)   # no frame
            function.__code__ = _spy_code(function, spy_name)
            swapped.append((function, code, spy_name))
        yield
    finally:
        for function, code, spy_name in swapped:
            function.__code__ = code
            function.__globals__.pop(spy_name, None)
