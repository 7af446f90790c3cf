"""What `make check` remembers: a grade is kept while nothing it depends on has changed.

A grader test's key is a hash of everything its verdict depends on:

  * the source of every exercise it grades, as it is now in labs/, and of every function,
    class or constant of labs/ that source uses, transitively (lesson 06's
    average_gradients_ring, once written, uses labs.ring.ring_all_reduce: editing the ring
    regrades the averaging too);
  * the grader file, and the labs/ functions it uses (`from labs.ring import chunk_bounds`);
  * the course's machinery: labs/*/ (harness, grading, views, ...), solutions/, the test
    configuration, and the versions of Python and torch.

Same key, same verdict: the test is not run again and the sheet says "remembered".

A stub nobody has touched (its body is still only `raise todo(...)`) needs no workers to be
graded: it is not started, by construction (`untouched_stub`).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import types
from pathlib import Path

import torch

from labs.harness import COURSE_ROOT as ROOT
from labs.harness.ranks.exercises import untouched
# The files of the course's machinery, relative to ROOT: any change regrades everything.
FRAME = ["labs/*/**/*.py", "labs/__init__.py", "solutions/*.py", "tests/conftest.py",
         "tests/check.py", "tests/course.py", "tests/procs.py", "tests/graders/__init__.py",
         "conftest.py", "pytest.ini", "pyproject.toml"]
_SIMPLE = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset,
           torch.dtype)


def _hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def frame_digest(root: Path = ROOT) -> str:
    """One hash of the machinery's files (names and contents), Python's and torch's versions."""
    files = sorted({p for pattern in FRAME for p in root.glob(pattern) if p.is_file()
                    and "__pycache__" not in p.parts})
    return _hash(sys.version, torch.__version__,
                 *(f"{p.relative_to(root)}\n{p.read_text(errors='replace')}" for p in files))


def _is_course_code(obj) -> bool:
    """A function or class of a learner-editable lab module (labs.<lesson>, not labs/*/)."""
    module = getattr(obj, "__module__", "") or ""
    return module.startswith("labs.") and module.count(".") == 1 and \
        isinstance(obj, (types.FunctionType, type))


def _names(code: types.CodeType) -> set:
    """Every global or attribute name a function's code (nested functions included) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return repr(obj)


def sources(objects, seen: dict | None = None) -> dict:
    """{qualified name: source} of `objects` (functions, classes, exercises) and of everything
    of labs/ they use, transitively: globals, and attributes of the lab modules they use."""
    seen = {} if seen is None else seen
    todo = list(objects)
    while todo:
        obj = todo.pop()
        obj = getattr(obj, "stub", obj)                 # an exercise: the body you wrote
        if not _is_course_code(obj):
            continue
        name = f"{obj.__module__}.{obj.__qualname__}"
        if name in seen:
            continue
        seen[name] = _source(obj)
        if isinstance(obj, type):
            members = [m for m in vars(obj).values() if isinstance(m, types.FunctionType)]
        else:
            members = [obj]
        for fn in members:
            namespace, used = fn.__globals__, _names(fn.__code__)
            for n in sorted(used):
                if n not in namespace:
                    continue
                value = namespace[n]
                if isinstance(value, types.ModuleType):
                    todo += _used_from(value, used)
                elif _is_course_code(getattr(value, "stub", value)):
                    todo.append(value)
                elif isinstance(value, _SIMPLE):
                    seen[f"{fn.__module__}.{n}"] = repr(value)[:100_000]
    return seen


def _used_from(module: types.ModuleType, used: set, depth: int = 0) -> list:
    """The attributes named in `used` of a labs module (`ring.chunk_bounds`,
    `labs.ring.chunk_bounds`), through submodules."""
    if not (module.__name__ == "labs" or module.__name__.startswith("labs.")) or depth > 3:
        return []
    found = []
    for a in sorted(used):
        value = getattr(module, a, None)
        if isinstance(value, types.ModuleType):
            found += _used_from(value, used, depth + 1)
        elif value is not None:
            found.append(value)
    return found


def untouched_stub(exercise) -> bool:
    """The exercise's body is still the stub's: a docstring, then only `raise todo(...)`."""
    stub = getattr(exercise, "stub", None)
    return stub is not None and untouched(stub)


def grader_key(frame: str, grader_module, exercises) -> str:
    """The key of one grader test: the machinery, the grader file and the labs/ code it uses,
    the exercises it grades and everything they use."""
    grader_code = [v for v in vars(grader_module).values() if _is_course_code(v)]
    used = sources(list(exercises) + grader_code)
    # A grader of a whole file you edit (lesson 12's script) names it in GRADED_FILES.
    files = [f"{path}\n{_read(path)}" for path in getattr(grader_module, "GRADED_FILES", ())]
    return _hash(frame, _source(grader_module), *files,
                 *(f"{name}\n{text}" for name, text in sorted(used.items())))


def text_sha256(path) -> str:
    """The SHA-256 of a text file's contents, line endings as "\\n" ("" if missing)."""
    text = _read(path)
    if text == "(missing)":
        return ""
    return hashlib.sha256(text.replace("\r\n", "\n").encode()).hexdigest()


def _read(path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(missing)"


class Memory:
    """Remembered grades, by test node id: {nodeid: {"key": ..., "grade": {...}}} in a JSON
    file (make check: .venv/p2p-grades.json). A damaged file is forgotten, not an error."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.entries = json.loads(self.path.read_text())
            if not isinstance(self.entries, dict):
                self.entries = {}
        except (OSError, ValueError):
            self.entries = {}

    def recall(self, nodeid: str, key: str) -> dict | None:
        entry = self.entries.get(nodeid)
        return entry["grade"] if isinstance(entry, dict) and entry.get("key") == key else None

    def keep(self, nodeid: str, key: str, grade: dict) -> None:
        self.entries[nodeid] = {"key": key, "grade": grade}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.entries, indent=1, sort_keys=True))
        tmp.replace(self.path)
