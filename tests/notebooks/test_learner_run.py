"""Run All on an untouched course: every lesson notebook, with no exercise solved.

A learner opens a notebook before solving its exercises and runs every cell. The
notebook must read to its end: a cell that needs an unsolved exercise says so and shows
the reference result (`launch_exercise`), and no cell shows an error. nbval checks the
committed outputs with the solutions on; this runs the stubs in labs/ as the learner has
them (P2P_COURSE_SOLUTIONS=0), in a kernel of this Python started in notebooks/, on an
in-memory copy (the committed notebook is never written).

A failure lists every cell with an error output or a traceback on stderr: the notebook's
cell index, the first line of its source, and the error. The executed copy is saved in
test-artifacts/learner-run/ to read in JupyterLab.

When the browser test (tests/browser) runs in the same session, it makes this same run for
the notebooks it opens: Run All in JupyterLab, no exercise solved, the same failures. Those
notebooks are then run once, there (conftest.py drops their learner run here).
"""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import ipykernel.kernelspec
import nbformat
import pytest
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError
from traitlets import default

from tests import course
from tests.procs import descendants, read, still_alive

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "learner-run"
# A deadline for each cell, not a speed test: a hang becomes a failure that names the cell.
# It is nbval's own per-cell deadline (pytest.ini's --nbval-cell-timeout), so a cell is held to
# the same bound in both runs. A whole-notebook budget was a speed test in disguise: notebook 11
# runs in 70-90 s alone and took over 180 s beside JupyterLab and `make check` on 2 cores. The
# notebook's time is printed (and in --durations), never asserted.
CELL_SECONDS = int(re.search(r"--nbval-cell-timeout=(\d+)",
                             (ROOT / "pytest.ini").read_text()).group(1))
ANSI = re.compile(r"\x1b\[[0-9;]*m")

pytestmark = pytest.mark.slow


class ThisPythonSpecs(KernelSpecManager):
    """The kernel is this Python (the course's .venv), whatever `python` is on PATH."""

    def get_kernel_spec(self, kernel_name):
        return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                      **ipykernel.kernelspec.get_kernel_dict())


class ThisPythonKernel(AsyncKernelManager):
    @default("kernel_spec_manager")
    def _specs(self):
        return ThisPythonSpecs(parent=self)


def learner_env(temp: Path | None = None) -> dict:
    """This process's environment as a learner's kernel has it: no solutions, no pytest;
    `temp`: the kernel's temporary folder (TMPDIR), to see what it leaves there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["P2P_COURSE_SOLUTIONS"] = "0"
    if temp is not None:
        env["TMPDIR"] = str(temp)
    return env


def kernel_tree(km) -> dict[int, str]:
    """The kernel and every process under it (fork server, workers): pid -> start time."""
    pid = getattr(km.provisioner, "pid", None) if km is not None else None
    proc = read(pid) if pid else None
    return {pid: proc.start, **descendants(pid)} if proc else {}


def run_unsolved(path: Path, temp: Path | None = None) -> tuple[nbformat.NotebookNode, float]:
    """Execute every cell of `path` in a learner's kernel (`temp`: its TMPDIR); returns the
    executed notebook (errors are recorded as outputs, as Run All shows them) and the seconds
    it took."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=ThisPythonKernel,
                            allow_errors=True, resources={"metadata": {"path": str(NOTEBOOKS)}})
    tracked: dict[int, str] = {}
    seconds: dict[int, float] = {}          # cell index -> how long it ran
    timed_out = None
    t0 = time.monotonic()
    try:
        with client.setup_kernel(env=learner_env(temp)):
            tracked.update(kernel_tree(client.km))
            client.timeout = CELL_SECONDS
            for index, cell in enumerate(nb.cells):
                start = time.monotonic()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    timed_out = index
                    break
                finally:
                    seconds[index] = time.monotonic() - start
                    tracked.update(kernel_tree(client.km))
    finally:
        left = stop_leftovers(tracked)
    assert not left, f"{path.name}: processes left after its kernel shut down (killed): {left}"
    if timed_out is not None:
        slowest = sorted(seconds, key=seconds.get, reverse=True)[:3]
        pytest.fail(f"{path.name}: cell {timed_out} ({_head(nb.cells[timed_out])!r}) did not "
                    f"finish within {CELL_SECONDS} s; slowest cells: "
                    + ", ".join(f"{i} ({seconds[i]:.0f} s)" for i in slowest), pytrace=False)
    return nb, time.monotonic() - t0


def stop_leftovers(tracked: dict[int, str], wait: float = 10.0) -> list[int]:
    """Give the kernel, its fork server and its workers `wait` s to exit; SIGKILL the
    ones still there and return them."""
    deadline = time.monotonic() + wait
    while still_alive(tracked) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = still_alive(tracked)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def _head(cell) -> str:
    lines = [line for line in cell.source.splitlines() if line.strip()]
    return lines[0][:80] if lines else ""


def errors_shown(nb) -> list[str]:
    """One line per cell whose outputs show an error: what a learner sees in red."""
    found = []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.output_type == "error":
                first_line = (ANSI.sub("", out.evalue).strip().splitlines() or [""])[0]
                what = f"{out.ename}: {first_line}"
            elif out.output_type == "stream" and out.name == "stderr" \
                    and "Traceback (most recent call last)" in out.text:
                what = "a traceback on stderr: " + out.text.strip().splitlines()[-1]
            else:
                continue
            found.append(f"cell {index} ({_head(cell)!r}): {what[:300]}")
    return found


@pytest.mark.parametrize("notebook", [lesson.notebook.name for lesson in course.lessons()])
def test_runs_to_the_end_unsolved(notebook, tmp_path):
    nb, seconds = run_unsolved(NOTEBOOKS / notebook, tmp_path)
    errors = errors_shown(nb)
    if errors:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, ARTIFACTS / notebook)
        pytest.fail(f"{notebook}, run with no exercise solved, shows {len(errors)} error(s) "
                    f"(executed copy: {(ARTIFACTS / notebook).relative_to(ROOT)}):\n"
                    + "\n".join(errors), pytrace=False)
    # A run leaves no trace: what the notebook, its workers and jobs made in the temporary
    # folder is gone once its kernel has shut down. (torch's compile cache, torchinductor_<user>,
    # is torch's own, made once for every torch program of the user and reused.)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.iterdir()
                  if not p.name.startswith("torchinductor_"))
    assert not left, f"{notebook} left in its temporary folder: {left}"
    print(f"{notebook}: every cell ran unsolved in {seconds:.1f} s, no error shown")
