"""Figures in a fresh kernel: every widget that draws, reached the shortest way a learner can.

Run All hides a class of bug: a figure made outside pyplot and shown with `display(fig)`
renders as an image only once *pyplot* has made a figure in that kernel (the inline backend
registers its PNG formatter then); Run All always runs such a cell first. A learner who
opens lesson 04, runs the import cell and then the explorer got the text
`<Figure size 900x310 with 1 Axes>` under the right per-rank text.

Here each widget gets a notebook of its own in real JupyterLab (a fresh kernel): only the
cells a learner must run to reach it are run, one by one (select the cell, Ctrl+Enter),
then its knobs are turned and its Run button clicked (tests/browser/knobs.py). Every turn
must show a drawn PNG (tests/browser/figures.py), and no figure's text form.

PATHS lists them; `test_every_drawing_widget_has_a_path` fails when a lesson gains a widget
this test does not reach.
"""
from __future__ import annotations

import json
import re

import pytest

from tests import course
from tests.browser.knobs import WIDGET_ROOT, exercise_widgets
from tests.browser.lab_page import (ARTIFACTS, PANEL, ROOT, NotebookRun, cell_states,
                                    kernel_idle, stripped_copy, wait_until)

pytestmark = pytest.mark.slow

IMPORTS = "import labs.views."          # every lesson's import cell imports its view
# (notebook, [a piece of the source of each cell the learner runs, in order]): the last
# cell shows the widget.
PATHS = {
    "01-rendezvous": ("01_point_to_point.ipynb", [IMPORTS, "view.rendezvous_explorer()"]),
    "03-scrub": ("03_waiting_and_overlap.ipynb",
                 [IMPORTS, "Both ranks post an isend to each other, wait() for it",
                  "import labs.harness.schedule as sc", "real = sc.execute(early)",
                  "run = sc.execute(fixed)",
                  "scrub(run.trace"]),
    "04-explorer": ("04_deadlock_hazards.ipynb", [IMPORTS, "view.explorer()"]),
    # head_to_head's cell draws with pyplot first: this path checks the slider, not the bug.
    "04-step-through": ("04_deadlock_hazards.ipynb",
                        [IMPORTS, "head_to_head = {", "more = {", "ring = sc.check(",
                         "step_through(more"]),
    "05-explore": ("05_ring_all_reduce.ipynb", [IMPORTS, "interact_manual(view.explore"]),
    "07-show-pattern": ("07_collectives_from_p2p.ipynb",
                        [IMPORTS, "interact_manual(view.show_pattern"]),
}
# Widgets that draw no figure (they print): nothing for this test to look at.
NO_FIGURE = {"view.explorer()": "00_welcome.ipynb", "view.ring_shift_explorer()":
             "02_p2pop_and_batching.ipynb"}
FIGURE_TEXT = re.compile(r"<Figure size \d+x\d+ with \d+ Axes>")
CELL_SECONDS = 90.0         # one cell: imports, or a launch of real workers
IMAGE_SECONDS = 20.0        # a turn's figure, once its text is in
TURNS = 2                   # the first click matters most; the second redraws


def code_cells(notebook: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def path_cells(notebook: str, pieces: list[str]) -> list[int]:
    """The code-cell index of each piece: the first cell, after the previous one, that holds it."""
    sources, found, start = code_cells(notebook), [], 0
    for piece in pieces:
        k = next((i for i in range(start, len(sources)) if piece in sources[i]), None)
        assert k is not None, f"{notebook}: no code cell after cell {start} holds {piece!r}"
        found.append(k)
        start = k + 1
    return found


def test_every_drawing_widget_has_a_path():
    """Each committed widget (other than a prediction) is the last cell of a path, or is
    listed as drawing nothing."""
    reached = {(nb, path_cells(nb, pieces)[-1]) for nb, pieces in PATHS.values()}
    missing = []
    for notebook in course.widget_notebooks():
        sources = code_cells(notebook.name)
        nb = json.loads(notebook.read_text())
        cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
        for k, cell in enumerate(cells):
            mimes = {m for out in cell.get("outputs", []) for m in out.get("data", {})}
            # a prediction, and what a demo holds until the pick (its figures draw then)
            if course.WIDGET_MIME not in mimes or "predict(" in sources[k] \
                    or "guess.held()" in sources[k]:
                continue
            if (notebook.name, k) in reached or NO_FIGURE.get(sources[k].strip()) == notebook.name:
                continue
            missing.append(f"{notebook.name}, code cell {k + 1}: {sources[k][:60]!r}")
    assert not missing, "widgets no path reaches (add them to PATHS or NO_FIGURE):\n" + \
        "\n".join(missing)


def run_cell(page, k: int, what: str) -> None:
    """Select code cell k (click its prompt: command mode) and run it with Ctrl+Enter, as a
    learner does; wait until it has its number and the kernel is idle."""
    cell = page.locator(f"{PANEL} .jp-Notebook .jp-Cell.jp-CodeCell").nth(k)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Control+Enter")

    def ran():
        state = cell_states(page)[k]
        if re.fullmatch(r"\[\d+\]:", state["prompt"]) and kernel_idle(page):
            return True
        return False
    wait_until(ran, CELL_SECONDS, f"{what}: code cell {k + 1} to run")


def drawn_images(page, k: int) -> int:
    """Loaded images in the outputs of code cell k."""
    return sum(im["complete"] and im["w"] > 0 for im in cell_states(page)[k]["images"])


def widget_text(page) -> str:
    return page.locator(f"{PANEL} .jp-OutputArea-output").evaluate_all(
        "(outs) => outs.map((o) => o.innerText || '').join('\\n')")


def pick_first(page, k: int, what: str) -> str:
    """A learner's prediction step: pick the first choice of code cell k's prediction as soon
    as it shows, before the cells whose output it holds (`with guess.held():`) run."""
    box = page.locator(f"{PANEL} .jp-Notebook .jp-Cell.jp-CodeCell").nth(k).locator(
        WIDGET_ROOT).first
    box.scroll_into_view_if_needed()
    choice = box.locator(".widget-radio-box label").first
    wait_until(lambda: choice.inner_text().strip(), 20, f"{what}: code cell {k + 1}'s choices")
    picked = choice.inner_text().strip()
    choice.click()
    wait_until(lambda: box.locator(".widget-radio-box input:checked").count(), 20,
               f"{what}: the pick {picked!r} in code cell {k + 1}")
    return picked


@pytest.mark.parametrize("path", list(PATHS))
def test_widget_draws_in_a_fresh_kernel(path, lab, browser):
    notebook, pieces = PATHS[path]
    cells = path_cells(notebook, pieces)
    sources = code_cells(notebook)
    ARTIFACTS.mkdir(exist_ok=True)
    copy = lab.root / f"{path}.ipynb"          # a notebook of its own: a kernel of its own
    stripped_copy(ROOT / "notebooks" / notebook, copy)
    run = NotebookRun(lab, str(copy))
    run.open(browser)
    page = run.page
    try:
        run.load()
        page.locator(f"{PANEL} .jp-Notebook .jp-CodeCell").first.wait_for(timeout=60_000)
        wait_until(lambda: kernel_idle(page), 60, f"the kernel of {copy.name} to start")
        _run_cells_and_predict(page, cells, sources, path)
        done = _turn_the_widget(page, cells, path)
        page.screenshot(path=str(ARTIFACTS / f"fresh-kernel-{path}.png"))
        images = drawn_images(page, cells[-1])
        assert not run.page_errors, f"{path}: JavaScript errors in the page: {run.page_errors}"
        print(f"{path}: cells {[k + 1 for k in cells]} run in a fresh kernel; {done}: "
              f"{images} image(s)")
    except BaseException:
        try:
            page.screenshot(path=str(ARTIFACTS / f"fresh-kernel-{path}-failed.png"))
        except Exception:  # noqa: BLE001 - the screenshot is a bonus
            pass
        raise
    finally:
        run.close()


def _run_cells_and_predict(page, cells, sources, path) -> None:
    """Run the path's cells, a prediction picked before the demo it holds runs; then each
    prediction's widget compares with what the demo showed."""
    predictions = []
    for k in cells:
        run_cell(page, k, path)
        if "predict(" in sources[k]:
            predictions.append((k, pick_first(page, k, path)))
    for k, picked in predictions:
        box = page.locator(f"{PANEL} .jp-Notebook .jp-Cell.jp-CodeCell").nth(k)
        wait_until(lambda box=box: re.search(r"[Yy]ou predicted", box.inner_text()), 30,
                   f"{path}: the prediction in code cell {k + 1} to compare {picked!r}")
    wait_until(lambda: cell_states(page)[cells[-1]]["widgets"], 30,
               f"{path}: the widget of code cell {cells[-1] + 1} to render")


def _turn_the_widget(page, cells, path) -> list[str]:
    """TURNS turns of the last cell's widget, each ending on a drawn image (not its text)."""
    done = []
    for _ in range(TURNS):
        turn, _ = exercise_widgets(page, path, rounds=1)
        done += turn
        # The turn's text can settle before its figure is in: wait for the image.
        try:
            wait_until(lambda: drawn_images(page, cells[-1]) and not FIGURE_TEXT.search(
                widget_text(page)), IMAGE_SECONDS, f"{path}: an image after {turn}")
        except AssertionError:
            text = widget_text(page)
            shown = FIGURE_TEXT.findall(text)
            raise AssertionError(
                f"{path}: a figure shown as text in a fresh kernel ({shown[0]}) after "
                f"{turn}" if shown else f"{path}: no image after {turn}; the output "
                f"shows:\n{text[-1500:]}") from None
    return done
