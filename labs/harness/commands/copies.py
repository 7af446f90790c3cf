"""Your own copies of the lessons, so that the committed notebooks stay the reference.

`make lab` copies every lesson you do not have yet from notebooks/ into notebooks/yours/
(git ignores that folder) and opens your copy: run and edit it freely; notebooks/NN_*.ipynb
keep showing the reference results. Your copy starts with no outputs (nothing answers a
prediction before you have made it): the reference's outputs, execution counts and saved
widget state are left out. `make reset LESSON=05` gives you a fresh copy of
lesson 05; the old one is kept in notebooks/yours/backup/. Close the lesson's tab in
JupyterLab first: an open tab saves its own content over the fresh copy, so reset refuses
while one is open (and says how to close it); a kernel left running after its tab was
closed is shut down for you (see jupyter_open.py).

    python -m labs.harness.commands.copies            # copy the lessons you do not have yet
    python -m labs.harness.commands.copies --reset 05 # a fresh copy of lesson 05 (old one backed up)
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from labs.harness import COURSE_ROOT
from labs.harness.commands import jupyter_open

NOTEBOOKS = COURSE_ROOT / "notebooks"
YOURS = NOTEBOOKS / "yours"


def lessons() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def learners_copy(lesson: Path, mine: Path) -> None:
    """Write the lesson to `mine` as a learner starts it: every cell, no output, no
    execution count, no saved widget state (the reference run's answers)."""
    nb = json.loads(lesson.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb["metadata"].pop("widgets", None)
    # as nbformat writes a notebook (its schema check, jsonschema, costs seconds to import)
    mine.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def copy_missing() -> list[Path]:
    """Copy each lesson you do not have yet; never touch a copy you have."""
    YOURS.mkdir(exist_ok=True)
    copied = []
    for lesson in lessons():
        mine = YOURS / lesson.name
        if not mine.exists():
            learners_copy(lesson, mine)
            copied.append(mine)
    return copied


def _lesson(number: str) -> Path:
    numbers = ", ".join(p.name[:2] for p in lessons())
    if not str(number).strip().isdigit():
        raise SystemExit(f"make reset LESSON={number}: LESSON is a lesson's number, one of "
                         f"{numbers} (e.g. make reset LESSON=05)")
    found = [p for p in lessons() if p.name.startswith(f"{int(number):02d}_")]
    if not found:
        raise SystemExit(f"no lesson {number!r}: the lessons are {numbers}")
    return found[0]


def refusal(rel: str, number: str, holder: jupyter_open.Holder) -> str:
    """What to do when the lesson is open in a JupyterLab tab: one way out, step by step."""
    name = Path(rel).name
    kernel = (" Its kernel is still running: the reset shuts it down for you once the tab "
              "is closed." if holder.kernel_running else " Its kernel is already shut down.")
    return (
        f"{rel} is open in a JupyterLab tab ({holder.url}).{kernel} A reset now would leave "
        f"that tab holding your old copy, and its next save would put it back over the "
        f"fresh one.\n"
        f"  1. In JupyterLab, close the tab {name} (the x on the tab). If JupyterLab asks "
        f"\"Save your work\", click Save: your latest edits go to the backup too.\n"
        f"  2. Run `make reset LESSON={number}` again.\n"
        f"(No JupyterLab page open in your browser? The server is still running: open "
        f"{holder.page} and close the tab there.)")


def free(mine: Path, number: str) -> None:
    """Make sure no Jupyter server holds the learner's copy: a kernel without a tab is shut
    down (and said so); an open tab is refused with the way out (SystemExit)."""
    rel = mine.relative_to(NOTEBOOKS.parent).as_posix()
    found = jupyter_open.holders(mine)
    for holder in found:
        if holder.tab_open:
            raise SystemExit(refusal(rel, number, holder))
    for holder in found:
        jupyter_open.shut_down(holder)
        print(f"JupyterLab's kernel for {rel} was still running (its tab is closed): "
              f"shut it down ({holder.url})")


def reset(number: str) -> Path:
    """A fresh copy of lesson `number`; your old copy goes to yours/backup/ (nothing lost).
    Refused while the copy is open in a JupyterLab tab: the tab's next save would undo it.
    A kernel still running for it with no tab open is shut down first."""
    lesson = _lesson(number)
    mine = YOURS / lesson.name
    if mine.exists():
        free(mine, number)
        backup = YOURS / "backup" / f"{mine.stem}-{time.strftime('%Y%m%d-%H%M%S')}.ipynb"
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(mine, backup)
        print(f"your copy is saved as {backup.relative_to(NOTEBOOKS.parent)}")
    YOURS.mkdir(exist_ok=True)
    learners_copy(lesson, mine)
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
