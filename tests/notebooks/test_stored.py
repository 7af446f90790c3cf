"""The committed notebooks hold what any reader's run would show, nothing of the machine
that ran them: no absolute path, date or pid in an output, no run's timestamps in a cell's
metadata (nbconvert records them unless told not to: see the README's maintainers' part)."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
MACHINE = re.compile(r"(?:^|[\s'\"(=])(/tmp/|/home/|/root/|/work/|/Users/)"   # absolute paths
                     r"|\b20\d\d-\d\d-\d\d(?!\d)"                               # dates
                     r"|\bpid[:= ]+\d+")                                       # pids


def _texts(cell):
    """The text of each output of a code cell (images left out: they are base64)."""
    for out in cell.get("outputs", []):
        yield "".join(out.get("text", ""))
        yield "".join(out.get("data", {}).get("text/plain", ""))
        yield "\n".join(out.get("traceback", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_committed_notebook_holds_nothing_of_the_machine_that_ran_it(path):
    cells = json.loads(path.read_text())["cells"]
    unnamed = [i for i, c in enumerate(cells) if "id" not in c]
    assert not unnamed, (f"{path.name}: cells {unnamed} have no id (nbformat warns, and will "
                         f"refuse them)")
    timed = [i for i, c in enumerate(cells) if "execution" in c.get("metadata", {})]
    assert not timed, (f"{path.name}: cells {timed} carry the run's timestamps; re-run with "
                       f"--ExecutePreprocessor.record_timing=False")
    for i, cell in enumerate(cells):
        for text in _texts(cell):
            found = MACHINE.search(text)
            assert not found, (f"{path.name}, cell {i}: {found.group(0)!r} in "
                               f"{text[max(0, found.start() - 60):found.end() + 30]!r}")


def test_the_check_sees_what_it_should():
    for leaked in ("saved to /tmp/p2p-x/r.png", "time: 2026-11-30_19:34", "(pid: 1532)",
                   "'/home/me/course'"):
        assert MACHINE.search(leaked), leaked
    for fine in ("labs/ring.py:12", "4/4 ranks", "a 20-rank job", "rapid 3"):
        assert not MACHINE.search(fine), fine
