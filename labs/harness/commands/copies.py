"""Your own copies of the lessons, so that the committed notebooks stay the reference.

`make lab` copies every lesson you do not have yet from notebooks/ into notebooks/yours/
(git ignores that folder) and opens your copy: run and edit it freely; notebooks/NN_*.ipynb
keep showing the reference results. `make reset LESSON=05` gives you a fresh copy of
lesson 05; the old one is kept in notebooks/yours/backup/. Close the lesson's tab in
JupyterLab first: an open tab saves its own content over the fresh copy (reset refuses
while a running Jupyter server has the notebook open).

    python -m labs.harness.commands.copies            # copy the lessons you do not have yet
    python -m labs.harness.commands.copies --reset 05 # a fresh copy of lesson 05 (old one backed up)
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import time
import urllib.parse
import urllib.request
from pathlib import Path

from labs.harness import COURSE_ROOT

NOTEBOOKS = COURSE_ROOT / "notebooks"
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


def _runtime_dir() -> str:
    try:
        from jupyter_core.paths import jupyter_runtime_dir
        return jupyter_runtime_dir()
    except ImportError:
        return os.path.expanduser("~/.local/share/jupyter/runtime")


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError, TypeError):
        return False


def open_in_jupyter(notebook: Path, runtime_dir: str | None = None) -> str | None:
    """The URL of a running Jupyter server that has `notebook` open (a session: an open
    tab), or None. Servers are found from their files in Jupyter's runtime directory
    (jpserver-*.json) and asked through their REST API (/api/sessions)."""
    target = notebook.resolve()
    for info_file in sorted(glob.glob(os.path.join(runtime_dir or _runtime_dir(),
                                                   "jpserver-*.json"))):
        try:
            with open(info_file) as f:
                info = json.load(f)
        except (OSError, ValueError):
            continue
        if not _alive(info.get("pid")) or "url" not in info:
            continue
        url = info["url"].rstrip("/") + "/api/sessions"
        if info.get("token"):
            url += "?" + urllib.parse.urlencode({"token": info["token"]})
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                sessions = json.load(answer)
        except (OSError, ValueError):
            continue                # a server that does not answer cannot save either
        root = Path(info.get("root_dir") or info.get("notebook_dir") or ".")
        for session in sessions:
            path = session.get("path") or session.get("notebook", {}).get("path", "")
            if path and (root / path).resolve() == target:
                return info["url"]
    return None


def _lesson(number: str) -> Path:
    numbers = ", ".join(p.name[:2] for p in lessons())
    if not str(number).strip().isdigit():
        raise SystemExit(f"make reset LESSON={number}: LESSON is a lesson's number, one of "
                         f"{numbers} (e.g. make reset LESSON=05)")
    found = [p for p in lessons() if p.name.startswith(f"{int(number):02d}_")]
    if not found:
        raise SystemExit(f"no lesson {number!r}: the lessons are {numbers}")
    return found[0]


def reset(number: str) -> Path:
    """A fresh copy of lesson `number`; your old copy goes to yours/backup/ (nothing lost).
    Refused while the copy is open in JupyterLab: the tab's next save would undo it."""
    lesson = _lesson(number)
    mine = YOURS / lesson.name
    server = open_in_jupyter(mine) if mine.exists() else None
    if server:
        raise SystemExit(
            f"{mine.relative_to(NOTEBOOKS.parent)} is open in JupyterLab ({server}): its next "
            f"save would overwrite a fresh copy. Close its tab first (File > Close and Shut "
            f"Down Notebook), then run `make reset LESSON={number}` again.")
    if mine.exists():
        backup = YOURS / "backup" / f"{mine.stem}-{time.strftime('%Y%m%d-%H%M%S')}.ipynb"
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(mine, backup)
        print(f"your copy is saved as {backup.relative_to(NOTEBOOKS.parent)}")
    YOURS.mkdir(exist_ok=True)
    shutil.copy2(lesson, mine)
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
