"""What still holds a process group after destroy_process_group(), and what frees it.

destroy_process_group() drops torch.distributed's own references; a group ends when the
last one goes (lesson 11, section 5). Each holder is named with the fix that frees the group:
- a variable of the script: a local of a frame that is still running (the function that
  called destroy_process_group(), or one that called it) or a module-level name, holding the
  group itself or objects that keep it (a list of P2POps, each with its `.group`; a DDP
  model's `.process_group`): `del` it before destroy_process_group();
- objects no variable leads to, that keep it as an attribute (found with the garbage
  collector's referrer lists): drop them first;
- functions that keep it as a default argument (torch.distributed.nn's, when it was imported
  after init_process_group, e.g. by DDP's or torch.compile's first import of torch._dynamo):
  import torch.distributed.nn before init_process_group.
What the doctor cannot name it does not guess at.
"""
from __future__ import annotations

import gc
import sys
import types
import warnings
from collections import Counter
from dataclasses import dataclass

from labs.harness.grading import callers

DEFAULTS_FIX = ("import torch.distributed.nn before init_process_group (the first import of "
                "torch._dynamo, by DDP or torch.compile, imports it)")
_SKIP = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
         types.MethodType, types.FrameType, types.CodeType)


@dataclass(frozen=True)
class Holder:
    """What holds the group, and what frees it."""

    what: str
    fix: str

    def line(self) -> str:          # one per line in the "destroyed" event's text
        return f"{self.what}\t{self.fix}"

    @classmethod
    def parse(cls, line: str) -> Holder:
        what, _, fix = line.partition("\t")
        return cls(what, fix)


def holders(ids: set, frame=None) -> list[Holder]:
    """Who holds the objects whose id() is in `ids` (groups that outlived their destroy),
    the script's variables first (its frames from `frame` outwards); [] if none can be named.
    Ids, not the groups: a reference kept here would hold them too."""
    with warnings.catch_warnings():     # looking at objects must not print their warnings
        warnings.simplefilter("ignore")
        seen: set = set()
        named = _variables(ids, frame or sys._getframe(1), seen)
        return named + _objects(ids, seen)


def encode(found: list[Holder]) -> str:
    return "\n".join(h.line() for h in found)


def decode(text: str) -> list[Holder]:
    return [Holder.parse(line) for line in text.splitlines() if line]


def _keeps(value, ids: set, seen: set, depth: int = 2) -> list[tuple]:
    """How `value` keeps a group: [] if it does not; else one (type name, attribute) per
    object that keeps it (("", "") for the group itself), through lists, tuples, sets, dicts."""
    if id(value) in ids:
        return [("", "")]
    if depth == 0 or isinstance(value, _SKIP):
        return []
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        items = value.values() if isinstance(value, dict) else value
        return [k for item in list(items)[:10_000] for k in _keeps(item, ids, seen, depth - 1)]
    try:
        attrs = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return []
    held = sorted(k for k, v in attrs.items() if id(v) in ids) if type(attrs) is dict else []
    if held:
        seen.add(id(value))
        return [(type(value).__name__, held[0])]
    return []


def _variables(ids: set, frame, seen: set) -> list[Holder]:
    out = []
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(callers._NOT_CALLERS) and \
                not code.co_filename.startswith("<"):
            where = f"{code.co_filename}:{frame.f_lineno}"
            names = {name: kept for name, value in frame.f_locals.items()
                     if not name.startswith("__") and (kept := _keeps(value, ids, seen))}
            if names:
                out.append(_variable_holder(names, code.co_name, where))
        frame = frame.f_back
    return out


def _variable_holder(names: dict, function: str, where: str) -> Holder:
    scope = "module-level" if function == "<module>" else f"in {function}()"
    what = "; ".join(f"`{name}` ({scope}, {where}): {_count(kept)}"
                     for name, kept in names.items())
    place = "at module level" if function == "<module>" else f"in {function}()"
    return Holder(what, f"`del {', '.join(names)}` {place} before destroy_process_group()")


def _count(kept: list[tuple]) -> str:
    """'the group itself', 'a P2POp (its .group)', '2 P2POp objects (their .group)'."""
    return ", ".join("the group itself" if not name else
                     f"a {name} (its .{attr})" if n == 1 else
                     f"{n} {name} objects (their .{attr})"
                     for (name, attr), n in Counter(kept).items())


def _objects(ids: set, seen: set) -> list[Holder]:
    owners: Counter = Counter()         # (type name, attribute) -> instances
    by_module: Counter = Counter()      # module -> functions with such a default
    for obj in gc.get_objects():
        kind = type(obj)
        if kind is types.FunctionType:
            if obj.__defaults__ and any(id(d) in ids for d in obj.__defaults__):
                by_module[obj.__module__] += 1
        elif kind not in (dict, list, tuple, set, types.FrameType, types.CellType) \
                and id(obj) not in seen:
            try:
                attrs = object.__getattribute__(obj, "__dict__")
            except AttributeError:
                continue
            held = sorted(k for k, v in attrs.items() if id(v) in ids) \
                if type(attrs) is dict else []
            if held:
                owners[(kind.__name__, held[0])] += 1
    out = [Holder(f"{name} object{'s' if n > 1 else ''} ({n}, {'their' if n > 1 else 'its'} "
                  f".{attr}) that no variable of the script's running frames holds",
                  f"drop the {name} object{'s' if n > 1 else ''} before destroy_process_group()")
           for (name, attr), n in owners.items()]
    out += [Holder(f"default arguments of {n} function{'s' if n > 1 else ''} of {module}",
                   DEFAULTS_FIX) for module, n in by_module.items()]
    return out
