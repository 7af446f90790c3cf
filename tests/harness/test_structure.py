"""The house's structure, read from the code's own imports: no cycle, every arrow downwards,
and no function or file over the house's length.

The layers, bottom to top (a module may import its own layer and the ones below):

    0  labs.harness             the harness's face: COURSE_ROOT, nothing else
    1  labs.harness.ranks       what code on the ranks uses: tracing, exercises, measuring
    2  labs.harness.launch      the launch engine; `labs` (the package's face) re-exports it
    3  labs.harness.notebook    notebook-side tools;  labs.harness.commands  command lines
    4  labs.harness.grading     the graders' toolkit; labs.harness.schedule  the checker
    5  the lessons              labs.<lesson>, labs.scripts, the templates, solutions
    6  above the lessons        labs.views, labs.claims, labs.bench

Imports inside functions count as much as those at the top of a file.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.course import ROOT

LAYERS = [
    ("labs.harness", 0, "exact"),
    ("labs.harness.ranks", 1, "package"),
    ("labs.harness.launch", 2, "package"),
    ("labs", 2, "exact"),
    ("labs.harness.notebook", 3, "package"),
    ("labs.harness.commands", 3, "package"),
    ("labs.harness.grading", 4, "package"),
    ("labs.harness.schedule", 4, "package"),
    ("labs.harness.templates", 5, "package"),
    ("labs.scripts", 5, "package"),
    ("solutions", 5, "package"),
    ("labs.views", 6, "package"),
    ("labs.claims", 6, "package"),
    ("labs.bench", 6, "package"),
]
LESSONS = 5          # any other labs.<name> is a lesson module

# The house's limits (def to last line, docstring included; a file's every line): a longer
# function or file fails the test. Split it where the parts read better alone.
MAX_LINES = 40
MAX_FILE_LINES = 450
# The bodies are learner code under test, long on purpose where a learner's is: their files
# keep the file limit, their functions are exempt (a split would change what is graded).
LEARNER_BODIES = ROOT / "tests" / "graders" / "bodies"


def python_files():
    for top in ("labs", "solutions"):
        yield from sorted((ROOT / top).rglob("*.py"))


def measured_files():
    """The files held to the length limits: the course's, its tests' and any notebook helper."""
    yield from python_files()
    for top in ("tests", "notebooks"):
        yield from sorted((ROOT / top).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def course_modules() -> dict[str, Path]:
    return {module_name(p): p for p in python_files()}


def imported(path: Path, modules: dict) -> set[str]:
    """The course's modules `path` imports: `from pkg import name` counts as pkg.name when
    that is a module, else as pkg."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                         else node.module for alias in node.names)
    return {name for name in found if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = course_modules()
    return {name: imported(path, modules) - {name} for name, path in modules.items()}


def layer(module: str) -> int:
    for prefix, level, how in LAYERS:
        if module == prefix or (how == "package" and module.startswith(prefix + ".")):
            return level
    assert module.startswith("labs."), module
    return LESSONS


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def long_functions() -> dict[str, int]:
    """'path:Class.function' -> lines, for every function over MAX_LINES lines."""
    found = {}

    def walk(node, path, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1
                if lines > MAX_LINES:
                    found[f"{path}:{prefix}{child.name}"] = lines
                walk(child, path, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, path, f"{prefix}{child.name}.")

    for path in measured_files():
        if not path.is_relative_to(LEARNER_BODIES):
            walk(ast.parse(path.read_text()), path.relative_to(ROOT).as_posix(), "")
    return found


def test_the_imports_have_no_cycle():
    assert cycles(import_graph()) == []


def test_every_import_points_down_or_sideways():
    climbing = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
                for a, targets in sorted(import_graph().items()) for b in sorted(targets)
                if layer(b) > layer(a)]
    assert climbing == [], "imports that climb a layer (see this file's docstring):\n" + \
        "\n".join(climbing)


def test_no_long_function():
    assert long_functions() == {}, f"functions over {MAX_LINES} lines: split them"


def test_no_long_file():
    long = {path.relative_to(ROOT).as_posix(): n for path in measured_files()
            if (n := len(path.read_text().splitlines())) > MAX_FILE_LINES}
    assert long == {}, f"files over {MAX_FILE_LINES} lines: split them, one job per file"


def test_every_module_has_a_layer_and_the_layers_are_used():
    modules = course_modules()
    assert {layer(m) for m in modules} == set(range(7))


def test_the_structure_test_sees_what_it_should():
    """A guard for the parser: known arrows are found (else the tests above prove nothing)."""
    graph = import_graph()
    assert "labs.harness.launch.launcher" in graph["labs"]
    assert "labs.harness.ranks.tracing" in graph["labs.harness.launch.worker"]
    assert "labs.harness.launch.launcher" in graph["labs.harness.commands.cli"]   # in a function
    assert "labs.ring" in graph["labs.bench.ring"]
    assert ROOT / "tests" / "check.py" in set(measured_files())
