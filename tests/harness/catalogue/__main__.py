"""Every body of one lesson or one exercise, wherever its round put it:

    python -m tests.harness.catalogue ring                    # lesson 05's bodies
    python -m tests.harness.catalogue ring.ring_all_reduce    # one exercise's

One line per entry: wrong or right, the grader, the world size (or argument), the body's
file:line, and for a wrong body what its failure must say.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path

from tests.harness.catalogue import RIGHT, WRONG
from tests.harness.catalogue.messages import BODIES

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Entry:
    verdict: str          # "wrong" or "right"
    lesson: str           # "ring"
    grader: str           # "test_ring_all_reduce"
    arg: object           # the world size, or the grader's argument
    body: str             # "ring.red2:ring_keeps_buffer"
    where: str            # "tests/graders/bodies/ring/red2.py:41"
    says: object = None   # what a wrong body's failure must say


def _where(body: str) -> str:
    module, name = body.split(":")
    try:
        target = importlib.import_module(f"{BODIES}.{module}")
        target = getattr(target, name) if name else target
        line = inspect.getsourcelines(target)[1] if name else 1
        return f"{Path(inspect.getsourcefile(target)).relative_to(ROOT)}:{line}"
    except (ImportError, AttributeError, TypeError, OSError):   # a script, run by torchrun
        return f"tests/graders/bodies/{module}/{name}.py"


def entries() -> list[Entry]:
    found = []
    for verdict, table in (("wrong", WRONG), ("right", RIGHT)):
        for grader, arg, body, *says in table:
            lesson = grader.__module__.rsplit(".", 1)[-1].removeprefix("test_")
            found.append(Entry(verdict, lesson, grader.__name__, arg, body, _where(body),
                               says[0] if says else None))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", help="a lesson's module (ring) or an exercise (ring.ring_all_reduce)")
    args = parser.parse_args(argv)
    lesson, _, exercise = args.what.partition(".")
    chosen = [e for e in entries() if e.lesson == lesson
              and (not exercise or e.grader == f"test_{exercise}")]
    for e in chosen:
        says = f"  says {e.says!r}" if e.says is not None else ""
        print(f"{e.verdict:5} {e.grader} [{e.arg}]  {e.where}  {e.body}{says}")
    print(f"{len(chosen)} bodies")
    return 0 if chosen else 1


if __name__ == "__main__":
    raise SystemExit(main())
