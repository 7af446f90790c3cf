"""What `make check` remembers: a grade is kept while nothing it depends on has changed.

A grader test's key is a hash of everything its verdict depends on:

  * the source of every exercise it grades, as it is now in labs/, and of every function,
    class or constant of labs/ that source uses, transitively (lesson 06's
    average_gradients_ring, once written, uses labs.ring.ring_all_reduce: editing the ring
    regrades the averaging too);
  * the grader file, and the labs/ functions it uses (`from labs.ring import chunk_bounds`);
  * the course's machinery the grader really runs: every file of labs/, solutions/ and tests/
    that the grader file imports, transitively (any import statement, lazy ones included; a lab
    module's own text counts function by function, as above, its imports as files; the
    reference of every lab module reached, solutions/<module>.py, as the graders load it by
    name), the test configuration, and the versions of Python and torch. A file nothing
    imports (lesson 12's script, your own scripts in labs/scripts/) regrades nothing.

Same key, same verdict: the test is not run again and the sheet says "remembered".

A stub nobody has touched (its body is still only `raise todo(...)`) needs no workers to be
graded: it is not started, by construction (`untouched_stub`).
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
import sys
import types
from pathlib import Path

import torch

from labs.harness import COURSE_ROOT as ROOT
from labs.harness.ranks.exercises import untouched
# What every grade depends on besides the code its grader imports: the test configuration.
CONFIG = ["conftest.py", "pytest.ini", "pyproject.toml", "tests/conftest.py", "tests/check.py",
          "tests/graders/__init__.py"]
PACKAGES = ("labs", "solutions", "tests")      # the course's own code; the rest is versioned
_SIMPLE = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset,
           torch.dtype)


def _hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def frame_digest(grader_file, root: Path = ROOT) -> str:
    """One hash of what a grader file runs of the course (`imported_files`) and the test
    configuration (names and contents), and of Python's and torch's versions."""
    files = sorted({root / c for c in CONFIG} | imported_files(Path(grader_file), root))
    return _hash(sys.version, torch.__version__,
                 *(f"{p.relative_to(root)}\n{_read(p)}" for p in files))


@functools.lru_cache(maxsize=None)
def _module_file(name: str, root: Path) -> Path | None:
    path = root.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _lab_module(path: Path, root: Path) -> bool:
    """labs/<lesson>.py: the learner's file, counted function by function (`sources`)."""
    return path.parent == root / "labs" and path.name != "__init__.py"


# An import statement anywhere in a file (lazy ones inside functions too): a regular
# expression reads a file in microseconds where parsing it takes milliseconds.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^#\n]+)"
                     r"|import[ \t]+([^#\n]+))", re.M)


def _imports(path: Path, root: Path) -> set[str]:
    """The course modules one file names in its import statements, wherever they are."""
    parts = path.relative_to(root).with_suffix("").parts
    package = parts if path.name == "__init__.py" else parts[:-1]
    names = set()
    for base, imported, plain in _IMPORT.findall(_read(path)):
        if plain:
            names |= {n.split(" as ")[0].strip() for n in plain.split(",")}
            continue
        dots = len(base) - len(base.lstrip("."))
        if dots:
            up = package[:len(package) - dots + 1] if dots > 1 else package
            base = ".".join([*up, base.lstrip(".")] if base.lstrip(".") else up)
        members = imported.strip("() \n").replace("\n", " ").split(",")
        names |= {base} | {f"{base}.{m.split(' as ')[0].strip()}" for m in members if m.strip()}
    return {n for n in names if n.split(".")[0] in PACKAGES}


def imported_files(start: Path, root: Path = ROOT) -> set[Path]:
    """The course's files `start` imports, transitively, with every package on the way, and
    solutions/<m>.py for every lab module <m> reached. A lab module's text is left out (its
    code counts function by function); what it imports is followed."""
    root = root.resolve()
    seen, todo, files = set(), [start.resolve()], set()
    graded = _module_file(start.stem.removeprefix("test_"), root / "labs")   # test_ring.py
    todo += [graded] if graded is not None else []                           # grades labs/ring.py
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if not _lab_module(path, root):
            files.add(path)
        else:
            reference = _module_file(f"solutions.{path.stem}", root)
            todo += [reference] if reference else []
        for name in _imports(path, root):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                found = _module_file(".".join(parts[:i]), root)
                if found is not None and found not in seen:
                    todo.append(found)
    return files


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
