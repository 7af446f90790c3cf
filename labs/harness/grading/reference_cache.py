"""The reference graded once: its record kept on disk, so that an edit runs only your body.

Each call of a GradedBody (graded.py) runs the reference solution on copies of the same
arguments and records what it did: its ops, whether it refused, what it returned (or wrote),
whether it drew random numbers. That is a function of what it depends on, so it is kept in a
file named by a hash of exactly that:

  * the reference's frame: the files of solutions/<module>.py and of the grading harness and
    what they import (memory.frame_digest: the test configuration, Python's and torch's
    versions too), and the source of every labs/ function they use (a reference may call
    your file's helpers, lesson 06's plan_buckets: editing one regrades);
  * the exercise, the world size, this rank, its place in the launch (below: what the
    others hold, on which a ring's record depends, follows from it), and this rank's
    arguments: shapes, dtypes, strides, which arguments share memory, values; a model's
    parameters and gradients; how the record is taken (hashing sends, noting a probe's
    values, tags ignored). A reference that drew random numbers is not kept (its record
    would depend on the generator's state).

All ranks must agree on a hit: a rank that misses runs the reference, which communicates,
and a partner that hit would not answer. So records are kept per launch, whole: each rank
writes its records into the launch's staging folder, and grade() moves them into the cache
only when the launch ended with every rank done (`commit`); a launch that failed or hung
keeps nothing. A record's name holds the rank's place in the launch (the grader's worker,
the how-many-th reference call of this rank): a later launch of the same grader reaches the
same calls in the same order on every rank, and finds all of them kept, or none. (An
exchange through the store cannot decide it: ranks sit out some calls, e.g. at odd world
sizes in lesson 04, so their decisions would not line up.) Off unless CACHE_ENV names a
folder (make check: beside its grades; tests: a temporary one).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh

from labs.harness import COURSE_ROOT
from labs.harness.grading import memory, record, tags
from labs.harness.grading.buffers import DIGESTS, DISTINCT, _flat_bytes
from labs.harness.grading.reference_files import (CACHE_ENV, STAGE_ENV,  # noqa: F401
                                                  commit, discard, folder, prune,
                                                  staging_folder)

_SIMPLE = (int, float, complex, str, bytes, bool, type(None), torch.dtype, torch.device,
           torch.memory_format, torch.layout)
_calls = 0                      # reference calls in this worker so far


@dataclass
class Entry:
    """What one call of the reference left: the grader reads nothing else of it."""

    ops: list
    refused: bool
    out: list | None              # the tensors it returned (or wrote); None on a probe
    drew: bool                    # it drew random numbers (then it is never kept)


def reference_run(module: str, name: str, args, kwargs, live, keep_out=True):
    """`live(args, kwargs)` -> Entry, or the Entry a whole earlier launch kept."""
    global _calls
    where = folder()
    if where is None or not dist.is_initialized():
        return live(args, kwargs)
    _calls += 1
    mine = _digest_of_call(args, kwargs)
    if mine is None:
        return live(args, kwargs)
    key = memory._hash(frame(module), name, str(dist.get_world_size()), str(dist.get_rank()),
                       str(_calls), _worker(), mine)
    entry = _load(where / f"{key}.pt")
    if entry is not None:
        _touch(where / f"{key}.pt")
        return entry
    groups = _group_count()
    entry = live(args, kwargs)
    staging = os.environ.get(STAGE_ENV, "")
    # Not kept: a reference that drew random numbers (its record depends on the generator's
    # state, which depends on what the process imported), or made a group (the names).
    if staging and not entry.drew and _group_count() == groups:
        _save(Path(staging) / f"{key}.pt",
              entry if keep_out else Entry(entry.ops, entry.refused, None, entry.drew))
    return entry


def _worker() -> str:
    """The grader's worker this call runs in: the outermost frame in tests/ (file:function)."""
    found, frame_ = "", sys._getframe(1)
    tests = str(COURSE_ROOT / "tests") + os.sep
    while frame_ is not None:
        if frame_.f_code.co_filename.startswith(tests):
            found = f"{os.path.relpath(frame_.f_code.co_filename, COURSE_ROOT)}:" \
                    f"{frame_.f_code.co_name}"
        frame_ = frame_.f_back
    return found


def _group_count() -> int:
    return getattr(dist.distributed_c10d._world, "group_count", 0)


# -- what a call depends on ------------------------------------------------------------------

def _digest_of_call(args, kwargs) -> str | None:
    """This rank's arguments and recording mode, hashed; None: not cacheable (an argument
    of a kind not known here, or the call made inside another record)."""
    if record._ACTIVE:
        return None
    h, storages = hashlib.sha256(), {}
    context = (DIGESTS[-1] if DIGESTS else None, repr(DISTINCT[-1]) if DISTINCT else None,
               bool(tags.TAGLESS))
    h.update(repr(context).encode())
    with torch._C.DisableTorchFunctionSubclass():
        if not _feed(h, (args, kwargs), storages):
            return None
    return h.hexdigest()


def _feed(h, obj, storages: dict) -> bool:
    """Add `obj` to the hash; False if it is of a kind whose digest is not known here."""
    if isinstance(obj, torch.Tensor):
        return _feed_tensor(h, obj, storages)
    if isinstance(obj, torch.nn.Module):
        return _feed_module(h, obj, storages)
    if isinstance(obj, DeviceMesh):      # lesson 13: the layout, and which groups it made
        groups = [obj.get_group(d).group_name for d in range(obj.ndim)]
        h.update(repr(("mesh", obj.device_type, obj.mesh.tolist(), obj.mesh_dim_names,
                       groups)).encode())
        return True
    if isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        return all(_feed(h, item, storages) for item in obj)
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        return all(_feed(h, k, storages) and _feed(h, v, storages) for k, v in obj.items())
    if isinstance(obj, _SIMPLE):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return True
    return False


def _feed_tensor(h, t: torch.Tensor, storages: dict) -> bool:
    """Its kind, layout, which earlier tensor's memory it shares, and its bytes."""
    storage = storages.setdefault(t.untyped_storage().data_ptr(), len(storages))
    h.update(repr((type(t).__name__, t.dtype, tuple(t.shape), t.stride(), t.storage_offset(),
                   t.requires_grad, storage, t.device.type)).encode())
    h.update(_flat_bytes(t).numpy().tobytes())
    return True


def _feed_module(h, module: torch.nn.Module, storages: dict) -> bool:
    """Its class, every parameter (tied ones by name) with its gradient, its buffers, and
    its plain attributes."""
    h.update(f"{type(module).__module__}.{type(module).__qualname__}:{module.training}".encode())
    seen: dict = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        h.update(f"{name}={seen.setdefault(id(p), len(seen))}".encode())
        _feed_tensor(h, p.data, storages)
        h.update(repr(p.requires_grad).encode())
        if p.grad is None:
            h.update(b"no grad")
        else:
            _feed_tensor(h, p.grad, storages)
    for name, b in module.named_buffers():
        h.update(name.encode())
        _feed_tensor(h, b, storages)
    for sub_name, sub in module.named_modules():
        plain = {k: v for k, v in vars(sub).items() if not k.startswith("_")}
        h.update(f"{sub_name}:{type(sub).__qualname__}".encode())
        for k in sorted(plain):
            v = plain[k]
            h.update((f"{k}={v!r}" if isinstance(v, _SIMPLE)
                      else f"{k}:{type(v).__name__}").encode())
    return True


# -- what the reference is: its frame ----------------------------------------------------------

@functools.lru_cache(maxsize=None)
def frame(module: str, root: Path = COURSE_ROOT) -> str:
    """One hash of the reference's module `module` ("solutions.ring"), what it imports, the
    grading harness, and the source of every labs/ function or class they use (as loaded)."""
    root = Path(root)
    solution = root / Path(*module.split(".")).with_suffix(".py")
    harness = root / "labs" / "harness" / "grading" / "graded.py"
    files = memory.imported_files(solution, root)
    used = memory.sources(_labs_used(files))
    return memory._hash(memory.frame_digest(solution, root), memory.frame_digest(harness, root),
                        *(f"{n}\n{text}" for n, text in sorted(used.items())))


def _labs_used(files) -> list:
    """The labs/ functions and classes that the loaded solutions modules among `files` use."""
    paths = {str(p) for p in files}
    found = []
    for name, mod in list(sys.modules.items()):
        if not name.startswith("solutions") or \
                os.path.realpath(getattr(mod, "__file__", "") or "") not in paths:
            continue
        for value in list(vars(mod).values()):
            if not isinstance(value, types.FunctionType) or value.__module__ != name:
                continue
            namespace, used = value.__globals__, memory._names(value.__code__)
            for n in sorted(used & namespace.keys()):
                target = namespace[n]
                if isinstance(target, types.ModuleType):
                    found += memory._used_from(target, used)
                elif memory._is_course_code(getattr(target, "stub", target)):
                    found.append(target)
    return found


# -- the files --------------------------------------------------------------------------------

def _load(path: Path) -> Entry | None:
    try:
        entry = torch.load(path, weights_only=False)
    except Exception:  # noqa: BLE001 - missing, half-written by a killed run, damaged: a miss
        return None
    return entry if isinstance(entry, Entry) else None


def _touch(path: Path) -> None:
    try:
        os.utime(path)        # prune() keeps what is used
    except OSError:
        pass


def _save(path: Path, entry: Entry) -> None:
    """Written whole, then renamed: a reader sees the old file, the new one or none."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        torch.save(entry, tmp)
        os.replace(tmp, path)
    except OSError:
        pass            # a full disk or a read-only folder: graded live next time too
