"""The lessons' own functions that communicate: a graded body may not send through them.

The lab modules hold, beside your exercises, the lessons' demonstrations: a correct ring shift
(lesson 07), snippet 3 with its fixes (lesson 08), blocking exchanges, ... A body that calls
one of them has its messages made by the course, not by the method it was asked to write.

Nothing lists them: `scan()` finds them in the lab modules as they are now. A lesson's
function is one the course itself uses: the committed notebooks, the views, claims, doctor,
benchmarks or tests name it (`lab.ring_shift`, `from labs.collectives import ring_shift`),
or it is `demo` (`python -m labs.<m>`), or another such function of its module calls it.
Of those, the ones that call torch.distributed to communicate, less the helpers the
reference solutions import (fold_in, chunk_bounds, ...: a learner may use them too). A
function you add to labs/<m>.py is named nowhere else, so it is never in the list; your
exercises never are (a lesson's function that calls one does not make it the course's).
"""
from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
import re
from pathlib import Path

from labs.harness import COURSE_ROOT

_COMMUNICATES = re.compile(
    r"\bdist\.(i?send|i?recv|batch_isend_irecv|P2POp|all_reduce|all_gather\w*|reduce_scatter\w*"
    r"|broadcast\w*|all_to_all\w*|reduce|gather|scatter|send_object_list|recv_object_list)\b")
# the course's own files that may name a lesson's function (never labs/<m>.py itself, which
# you edit, nor notebooks/yours/)
_USERS = ("labs/views", "labs/claims", "labs/doctor", "labs/bench", "labs/scripts", "tests")


def codes() -> list:
    """The code objects of those functions, as the lab modules define them now (a module
    that does not import, one you are editing, has nothing a body could call)."""
    found = []
    for module, names in scan().items():
        try:
            namespace = vars(importlib.import_module(f"labs.{module}"))
        except Exception:  # noqa: BLE001 - a syntax error in another lesson is not this grade's
            continue
        found += [inspect.unwrap(namespace[name]).__code__ for name in names
                  if inspect.isfunction(namespace.get(name))]
    return found


def _solutions_use(root: Path) -> set[tuple[str, str]]:
    """(module, name) of every lab function a reference solution imports."""
    used = set()
    for path in sorted((root / "solutions").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labs."):
                used |= {(node.module.split(".")[-1], alias.name) for alias in node.names}
    return used


def _users(root: Path) -> list[Path]:
    """The course files that may name a lesson's function (read as text: fast)."""
    paths = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return paths + sorted(p for folder in _USERS for p in (root / folder).rglob("*.py"))


def _signature(root: Path) -> tuple:
    """What scan() reads, as the files are now: (path, mtime, size) of each."""
    paths = [*_users(root), *sorted((root / "labs").glob("*.py")),
             *sorted((root / "solutions").glob("*.py"))]
    signature = []
    for path in paths:
        with contextlib.suppress(OSError):
            stat = path.stat()
            signature.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(signature)


def _names_used(root: Path) -> dict[str, dict[str, set]]:
    """Per course file, the names it uses after a prefix: `lab.x` or `<module>.x` (`lab`
    stands for any module) and `from labs.<module> import x`."""
    paths = _users(root)
    modules = sorted(p.stem for p in (root / "labs").glob("*.py"))
    prefixed = re.compile(rf"\b({'|'.join(['lab', *modules])})\.([A-Za-z_]\w*)")
    named = {}
    for path in paths + sorted((root / "labs").glob("*.py")):
        text = "\n".join(line for line in path.read_text(errors="replace").splitlines()
                         if not line.lstrip().startswith('"image/'))    # a plot's base64
        pairs = set(prefixed.findall(text))
        for module, names in re.findall(r"from\s+labs\.(\w+)\s+import\s+(\([^)]*\)|[^\n]*)", text):
            pairs |= {(module, name) for name in re.findall(r"\w+", names)}
        by_prefix: dict[str, set] = {}
        for prefix, name in pairs:
            by_prefix.setdefault(prefix, set()).add(name)
        named[path.stem if path.parent == root / "labs" else str(path)] = by_prefix
    return named


def _named_elsewhere(named: dict, module: str) -> set[str]:
    """The names of labs/<module>.py's functions that another course file uses."""
    return {name for where, by_prefix in named.items() if where != module
            for prefix in ("lab", module) for name in by_prefix.get(prefix, ())}


def _courses(named: dict, module: str, tree: ast.Module,
             functions: dict[str, ast.FunctionDef]) -> set[str]:
    """The functions of the module the course uses: named elsewhere, or `demo`, or in the
    module's own tables (`VARIANTS = {...: fn}`), or called by one of those (never through
    an exercise: what it calls is yours)."""
    elsewhere = _named_elsewhere(named, module)
    tables = {getattr(node, "id", None) for statement in tree.body
              if not isinstance(statement, (ast.FunctionDef, ast.ClassDef))
              for node in ast.walk(statement)}
    found = {n for n in functions if n == "demo" or n in elsewhere or n in tables}
    todo = list(found)
    while todo:
        for node in ast.walk(functions[todo.pop()]):
            callee = getattr(node, "id", None)
            if callee in functions and callee not in found and not _is_exercise(functions[callee]):
                found.add(callee)
                todo.append(callee)
    return found


def _is_exercise(node: ast.FunctionDef) -> bool:
    return any(getattr(d, "id", "") == "exercise" for d in node.decorator_list)


def scan(root: Path = COURSE_ROOT) -> dict[str, tuple[str, ...]]:
    """Every lesson's function (above) of labs/<lesson>.py that is not an exercise, calls
    torch.distributed to communicate, and is not imported by a reference solution.
    Remembered while the files it reads are unchanged: a grader's fork server scans once
    (preload.py) and each rank it forks checks the files' stat, not their text."""
    return _scan(root, _signature(root))


@functools.lru_cache(maxsize=4)
def _scan(root: Path, signature: tuple) -> dict[str, tuple[str, ...]]:
    used, named = _solutions_use(root), _names_used(root)
    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((root / "labs").glob("*.py")):
        module, source = path.stem, path.read_text()
        if module in ("__init__", "plans"):          # plans.py is forbidden as a whole
            continue
        tree, lines = ast.parse(source), source.splitlines()
        functions = {node.name: node for node in tree.body
                     if isinstance(node, ast.FunctionDef) and not _is_exercise(node)}
        courses = _courses(named, module, tree, functions)
        names = tuple(name for name, node in functions.items()
                      if name in courses and (module, name) not in used and _COMMUNICATES.search(
                          "\n".join(lines[node.lineno - 1:node.end_lineno])))
        if names:
            found[module] = names
    return found
