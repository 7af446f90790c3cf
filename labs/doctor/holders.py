"""What still holds a process group after destroy_process_group(), in words for the report.

destroy_process_group() drops torch.distributed's own references; a group ends when the
last one goes. The usual holders, found with the garbage collector's referrer lists:
objects that keep it as an attribute (a P2POp's `.group`, a DDP model's `.process_group`)
and functions that keep it as a default argument (torch.distributed.nn's, when it was
imported after init_process_group: DistributedDataParallel imports it).
"""
from __future__ import annotations

import gc
import types
import warnings
from collections import Counter

ADVICE = {
    "P2POp": "drop the P2POp objects before destroy_process_group() (build them inside a "
             "function, or `del ops`)",
    "defaults": ("import torch.distributed.nn before init_process_group (the first import of "
                 "torch._dynamo, by DDP or torch.compile, imports it)"),
}


def holders(ids: set) -> list[str]:
    """Who holds the objects whose id() is in `ids` (groups that outlived their destroy):
    'P2POp objects (3, their .group)', 'default arguments of 10 functions of
    torch.distributed.nn.functional'; [] if none of these kinds. Ids, not the groups: a
    reference kept here would hold them too."""
    with warnings.catch_warnings():     # looking at objects must not print their warnings
        warnings.simplefilter("ignore")
        return _holders(ids)


def _holders(ids: set) -> list[str]:
    owners: Counter = Counter()         # (type name, attribute) -> instances
    by_module: Counter = Counter()      # module -> functions with such a default
    for obj in gc.get_objects():
        kind = type(obj)
        if kind is types.FunctionType:
            if obj.__defaults__ and any(id(d) in ids for d in obj.__defaults__):
                by_module[obj.__module__] += 1
        elif kind not in (dict, list, tuple, set, types.FrameType, types.CellType):
            try:
                attrs = object.__getattribute__(obj, "__dict__")
            except AttributeError:
                continue
            held = sorted(k for k, v in attrs.items() if id(v) in ids) \
                if type(attrs) is dict else []
            if held:
                owners[(kind.__name__, held[0])] += 1
    described = [f"{name} object{'s' if n > 1 else ''} ({n}, {'their' if n > 1 else 'its'} "
                 f".{attr})" for (name, attr), n in owners.items()]
    described += [f"default arguments of {n} function{'s' if n > 1 else ''} of {module}"
                  for module, n in by_module.items()]
    return described


def advice(described: list[str]) -> str:
    """What to do about the holders `holders()` described."""
    todo = [ADVICE["P2POp"] for d in described if d.startswith("P2POp")][:1]
    todo += [ADVICE["defaults"] for d in described if d.startswith("default arguments")][:1]
    return "; ".join(todo) or "drop what still holds it before destroy_process_group()"
