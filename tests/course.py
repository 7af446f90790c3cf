"""The course's lessons, found from the files: adding lesson NN edits nothing here.

A lesson is a notebook `notebooks/NN_<topic>.ipynb`. Its lab module is the one the
notebook imports as `lab` (`import labs.<module> as lab`); that module's `@exercise`
functions are the lesson's exercises, their reference bodies live in
`solutions/<module>.py`, their graders in `tests/graders/test_<module>.py` and the
lesson's other tests in `tests/lessons/test_<module>.py`.
"""
from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from labs.harness.ranks.exercises import exercises_in

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_NAME = re.compile(r"^(\d\d)_\w+\.ipynb$")
LAB_IMPORT = re.compile(r"^\s*import labs\.(\w+) as lab\s*$", re.M)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@dataclass(frozen=True)
class Lesson:
    number: str            # "05"
    notebook: Path         # notebooks/05_ring_all_reduce.ipynb
    modules: tuple         # the lab modules it imports as `lab` (one, for a sound lesson)

    @property
    def module(self) -> str | None:
        return self.modules[0] if self.modules else None


def _code(notebook: Path) -> list[dict]:
    return [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]


def lessons() -> list[Lesson]:
    """Every lesson, in order."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        match = NOTEBOOK_NAME.match(path.name)
        if match:
            source = "\n".join("".join(c["source"]) for c in _code(path))
            found.append(Lesson(match[1], path, tuple(dict.fromkeys(LAB_IMPORT.findall(source)))))
    return found


def lesson_modules() -> list[str]:
    """The lab modules of the lessons, in lesson order."""
    return [lesson.module for lesson in lessons() if lesson.module]


def exercises() -> list[tuple[str, str]]:
    """(module, exercise name) for every exercise of the course, in lesson order."""
    return [(m, name) for m in lesson_modules()
            for name in exercises_in(importlib.import_module(f"labs.{m}"))]


def modules_with_demo() -> list[str]:
    """The lab modules that define `demo(rank, world_size)` (run as `python -m labs.<m>`)."""
    return [m for m in lesson_modules()
            if callable(getattr(importlib.import_module(f"labs.{m}"), "demo", None))]


def widget_notebooks() -> list[Path]:
    """The lessons whose committed outputs show an ipywidgets control."""
    return [lesson.notebook for lesson in lessons()
            if any(WIDGET_MIME in out.get("data", {})
                   for cell in _code(lesson.notebook) for out in cell.get("outputs", []))]
