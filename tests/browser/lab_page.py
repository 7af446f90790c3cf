"""Driving JupyterLab in the page as a reader does: menus, cell prompts, widgets, saving.

One `NotebookRun` is one notebook opened in its own browser page: a copy with the stored
outputs stripped (every output the test sees comes from this run), served by the test's
JupyterLab server, run with Run > Run All Cells.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import nbformat

from labs.harness.commands.copies import learners_copy
from tests import course
from tests.browser.lab_server import TOKEN

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

# Per code cell: its prompt ("[3]:", "[*]:", "[ ]:"), its images, its rendered widgets.
CELL_STATE_JS = """(panel) => {
  const cells = [...document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell.jp-CodeCell')];
  return cells.map((c) => {
    const prompt = c.querySelector('.jp-InputArea-prompt');
    const imgs = [...c.querySelectorAll('.jp-OutputArea-output img')].map((i) => ({
      w: i.naturalWidth, h: i.naturalHeight, complete: i.complete}));
    return {prompt: prompt ? prompt.textContent.trim() : '', images: imgs,
            widgets: c.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length};
  });
}"""


def cell_states(page):
    return page.evaluate(CELL_STATE_JS, PANEL)


def kernel_idle(page) -> bool:
    """The notebook has its kernel (not "No Kernel") and the kernel is idle."""
    return page.evaluate("""(panel) => {
      const name = document.querySelector(panel + ' [data-jp-item-name="kernelName"]');
      const ind = document.querySelector(panel + ' .jp-Notebook-ExecutionIndicator');
      return !!name && !!ind && !/No Kernel/.test(name.textContent)
             && ind.getAttribute('data-status') === 'idle';
    }""", PANEL)


def run_menu_command(page, menu: str, item: str) -> None:
    """Click a top menu, then one of its items by its label (as a reader does)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{re.escape(menu)}$")).first.click()
    entry = page.locator(".lm-Menu-content > .lm-Menu-item").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$"))).first
    entry.wait_for(state="visible", timeout=10_000)
    # A menu command never navigates; with six notebooks busy, waiting for "scheduled
    # navigations" after the click can outlast the timeout although the click landed.
    entry.click(no_wait_after=True)


def wait_until(predicate, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def stripped_copy(src: Path, dst: Path) -> nbformat.NotebookNode:
    """The notebook as a reader gets it, minus stored outputs and widget state, so every
    output the test sees was produced by this run."""
    learners_copy(src, dst)            # what `make lab` gives a reader: one definition
    return nbformat.read(dst, as_version=4)


def saved_errors(path: Path) -> list[str]:
    """Errors in the notebook as JupyterLab saved it after the run. A cell that catches an
    exception on purpose prints text (e.g. `exc.brief()`); that is not an error here."""
    nb = nbformat.read(path, as_version=4)
    problems = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        catches = "except" in cell.source
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                problems.append(f"code cell {i + 1} raised {out.ename}: {out.evalue}")
                continue
            text = out.get("text", "") if out.output_type == "stream" else \
                json.dumps(out.get("data", {}))
            if "Traceback" in text and (out.get("name") == "stderr" or not catches):
                problems.append(f"code cell {i + 1} shows a traceback "
                                f"({out.get('name', out.output_type)}): {text[:600]}")
        if cell.execution_count is None:
            problems.append(f"code cell {i + 1} was not executed")
    return problems


def saved_since(path: Path, mtime: float) -> bool:
    """JupyterLab wrote the file after `mtime`, and it parses."""
    try:
        if path.stat().st_mtime_ns <= mtime:
            return False
        nbformat.read(path, as_version=4)
        return True
    except Exception:  # noqa: BLE001 - being written right now
        return False


def committed_kinds(nb) -> list[set]:
    """Per code cell of the committed notebook: {'image', 'widget'} where its stored
    outputs have a figure / a widget view (the browser must show the same)."""
    kinds = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        mimes = {m for out in cell.get("outputs", []) for m in out.get("data", {})}
        kinds.append({k for k, m in (("image", "image/png"), ("widget", course.WIDGET_MIME))
                      if m in mimes})
    return kinds


WIDGETS_JS = """(panel) => {
  const root = document.querySelector(panel);
  const label = (el) => ((el.querySelector(':scope > .widget-label') || {}).textContent || '').trim();
  return {
    dropdown: [...root.querySelectorAll('.jp-OutputArea-output .widget-dropdown')].map(label),
    slider: [...root.querySelectorAll('.jp-OutputArea-output .widget-slider')].map(label),
    button: [...root.querySelectorAll('.jp-OutputArea-output button.jupyter-button')]
              .map((b) => b.textContent.trim()),
    output: [...root.querySelectorAll('.jp-OutputArea-output .widget-output')].map(() => ''),
    choice: [...root.querySelectorAll('.jp-OutputArea-output .widget-radio-box label')]
              .map((l) => l.textContent.trim()),
    broken: [...root.querySelectorAll('.jp-OutputArea-output')]
              .map((o) => o.innerText || '')
              .filter((t) => /Loading widget|Error displaying widget/.test(t))
              .map((t) => t.slice(0, 300)),
  };
}"""


def rendered_widgets(page) -> dict:
    return page.evaluate(WIDGETS_JS, PANEL)


class NotebookRun:
    """One notebook opened in its own browser page, run with Run > Run All Cells."""

    def __init__(self, lab, notebook: str):
        self.lab = lab
        self.src = (ROOT / notebook) if not os.path.isabs(notebook) else Path(notebook)
        self.name = self.src.name
        self.shot = ARTIFACTS / f"jupyterlab-{self.src.stem}"
        self.error = None               # what went wrong while opening / running, if anything
        self.page = self.context = None
        self.page_errors: list[str] = []
        self.states = self.seconds = self.t0 = None
        self.committed, self.n_code = [], 0
        self.closed = False
        self._quiet = 0

    def open(self, browser):
        """Copy the notebook (outputs stripped) where the server serves it; a fresh page."""
        assert self.src.is_file(), f"{self.src} does not exist"
        self.committed = committed_kinds(nbformat.read(self.src, as_version=4))
        copy = stripped_copy(self.src, self.lab.root / self.name)
        self.n_code = sum(c.cell_type == "code" for c in copy.cells)
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))

    def load(self):
        """Ask for the notebook's page (JupyterLab then opens it and starts its kernel)."""
        self.t0 = time.monotonic()
        self.page.goto(f"{self.lab.url}/lab/tree/{self.name}?reset&token={TOKEN}")

    def start(self):
        """Wait for the notebook and its kernel, then click Run > Run All Cells."""
        self.page.locator(f"{PANEL} .jp-Notebook .jp-CodeCell").first.wait_for(timeout=60_000)
        wait_until(lambda: kernel_idle(self.page), 60, f"the kernel of {self.name} to start")
        run_menu_command(self.page, "Run", "Run All Cells")

    def finished(self):
        """The run is over: the kernel is idle and no cell is running or queued ([*]),
        twice in a row. (Run All stops at a cell that raises: the cells after it stay
        unnumbered, and the checks report them.)"""
        states = cell_states(self.page)
        over = (len(states) == self.n_code and kernel_idle(self.page)
                and not any("*" in s["prompt"] for s in states)
                and any(re.fullmatch(r"\[\d+\]:", s["prompt"]) for s in states))
        self._quiet = self._quiet + 1 if over else 0
        if self._quiet >= 2:
            self.states, self.seconds = states, time.monotonic() - self.t0
            return True
        return False

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.lab.shutdown_kernel(self.name)
        finally:
            if self.context is not None:
                self.context.close()
