"""Your own copies of the lessons, so that the committed notebooks stay the reference.

`make lab` copies every lesson you do not have yet from notebooks/ into notebooks/yours/
(git ignores that folder) and opens your copy: run and edit it freely; notebooks/NN_*.ipynb
keep showing the reference results. `make reset LESSON=05` gives you a fresh copy of
lesson 05; the old one is kept in notebooks/yours/backup/.

    python -m labs.harness.copies            # copy the lessons you do not have yet
    python -m labs.harness.copies --reset 05 # a fresh copy of lesson 05 (old one backed up)
"""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
YOURS = NOTEBOOKS / "yours"


def lessons() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def copy_missing() -> list[Path]:
    """Copy each lesson you do not have yet; never touch a copy you have."""
    YOURS.mkdir(exist_ok=True)
    copied = []
    for lesson in lessons():
        mine = YOURS / lesson.name
        if not mine.exists():
            shutil.copy2(lesson, mine)
            copied.append(mine)
    return copied


def reset(number: str) -> Path:
    """A fresh copy of lesson `number`; your old copy goes to yours/backup/ (nothing lost)."""
    found = [p for p in lessons() if p.name.startswith(f"{int(number):02d}_")]
    if not found:
        raise SystemExit(f"no lesson {number!r}: the lessons are "
                         f"{', '.join(p.name[:2] for p in lessons())}")
    mine = YOURS / found[0].name
    if mine.exists():
        backup = YOURS / "backup" / f"{mine.stem}-{time.strftime('%Y%m%d-%H%M%S')}.ipynb"
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(mine, backup)
        print(f"your copy is saved as {backup.relative_to(NOTEBOOKS.parent)}")
    YOURS.mkdir(exist_ok=True)
    shutil.copy2(found[0], mine)
    print(f"fresh copy: {mine.relative_to(NOTEBOOKS.parent)}")
    return mine


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reset", metavar="NN", help="a fresh copy of lesson NN")
    opts = parser.parse_args(argv)
    if opts.reset:
        reset(opts.reset)
    else:
        for mine in copy_missing():
            print(f"new: {mine.relative_to(NOTEBOOKS.parent)}")


if __name__ == "__main__":
    main()
