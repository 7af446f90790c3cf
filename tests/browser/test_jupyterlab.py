"""The reader's real path: the notebooks in JupyterLab, in a real (headless) browser.

nbval proves that every cell's output is right; it never renders anything. This test
starts a real JupyterLab server (tests/browser/lab_server.py: temporary dirs, a fixed
token, 127.0.0.1, this Python, the exercises as a learner has them, none solved), opens
every lesson notebook that shows a widget (found from its committed outputs) through the
UI in headless Chromium driven by Playwright (one page per notebook, all running at
once), clicks Run > Run All Cells, and checks what a reader sees:

  * no prediction's answer is on the page before the reader picks (tests/browser/
    predictions.py: the page read whole, then every prediction picked);
  * every code cell ran and none failed: no output of type error, no traceback except
    in a cell that catches the exception and prints it on purpose (File > Save, then
    the saved notebook is read back);
  * the ipywidgets controls render as widgets (not "Loading widget..." or "Error
    displaying widget"): in every cell that has one in the committed notebook, with
    the controls the lesson describes (EXPECT);
  * matplotlib figures appear as images in every cell that has one when committed, and
    each is really drawn: its PNG is read back and must not be tiny, one flat colour or
    nearly empty (tests/browser/figures.py);
  * every widget works (tests/browser/knobs.py): a prediction compares the reader's pick
    with the run; changing a control and clicking Run starts real workers again and shows
    fresh output with no traceback, and its figures are drawn, from the first click on.

The notebooks are copied (outputs stripped) into a temporary directory that the server
serves, so the committed notebooks are never touched. Screenshots go to test-artifacts/.
Nothing is left running: kernels are shut down through the server's API, the server's
process group is killed, and the OS is asked whether any process we started survived.

Chromium: Debian's `chromium` (tests/browser/install_chromium.sh), or set CHROMIUM to an
executable. Without one, the test is skipped with that message.
P2P_COURSE_BROWSER_NOTEBOOKS="a.ipynb,b.ipynb" runs other notebooks (paths).
"""
from __future__ import annotations

import os
import time

import pytest

from tests import course
from tests.browser.figures import image_problems
from tests.browser.knobs import exercise_widgets
from tests.browser.lab_page import (ARTIFACTS, PANEL, ROOT, NotebookRun, cell_states,
                                    rendered_widgets, run_menu_command, saved_errors,
                                    saved_since, wait_until)
from tests.browser.predictions import (check_no_answer_before_the_pick, has_predictions,
                                       read_whole_pages)

# Every lesson whose committed outputs show a widget (found from the notebook files): every
# lesson with a prediction among them (a prediction is a widget).
NOTEBOOKS = [str(p.relative_to(ROOT)) for p in course.widget_notebooks()]
# A notebook runs in < 60 s alone (up to 90 s for those that wait out deadlock demos); here
# AT_ONCE run side by side, on a machine where the rest of the suite runs too.
AT_ONCE = 3
RUN_ALL_SECONDS = 240.0

# What a notebook must show beyond what its committed outputs say: widget controls as
# (kind, label), kind dropdown / slider / button / choice / output; "figure": a matplotlib
# figure is part of the lesson; "widget_figure": its widgets draw one. Any other notebook
# needs at least one control.
EXPECT = {
    "00_welcome.ipynb": {"widgets": [("slider", "world size"), ("button", "Run"),
                                     ("output", "")]},
    "01_point_to_point.ipynb": {"widgets": [("button", "Run Interact"), ("output", "")],
                                "figure": True, "widget_figure": True},
    "03_waiting_and_overlap.ipynb": {"figure": True, "widget_figure": True},
    "04_deadlock_hazards.ipynb": {"widgets": [("dropdown", "pattern"),
                                              ("slider", "world size"), ("slider", "numel"),
                                              ("button", "Run"), ("output", "")],
                                  "figure": True, "widget_figure": True},
    "05_ring_all_reduce.ipynb": {"figure": True, "widget_figure": True},
    "07_collectives_from_p2p.ipynb": {"figure": True, "widget_figure": True},
}

pytestmark = pytest.mark.slow


def _notebooks() -> list[str]:
    chosen = os.environ.get("P2P_COURSE_BROWSER_NOTEBOOKS", "").strip()
    return [p.strip() for p in chosen.split(",") if p.strip()] if chosen else NOTEBOOKS


@pytest.fixture(scope="module")
def runs(lab, browser):
    """Every notebook in its own page, AT_ONCE of them running at a time: the deadlock
    lessons mostly wait for timeouts, so side by side saves most of that time, and a cap
    keeps the machine usable for the tests that run beside this one."""
    ARTIFACTS.mkdir(exist_ok=True)
    read_whole_pages(lab)
    opened = {notebook: NotebookRun(lab, notebook) for notebook in _notebooks()}
    waiting, running = list(opened.values()), {}      # run -> its deadline
    try:
        while waiting or running:
            while waiting and len(running) < AT_ONCE:
                run = waiting.pop(0)
                try:
                    run.open(browser)
                    run.load()
                    run.start()
                    running[run] = time.monotonic() + RUN_ALL_SECONDS
                except Exception as exc:  # noqa: BLE001 - reported by that notebook's test
                    run.error = exc
            for run, deadline in list(running.items()):
                try:
                    if run.finished():
                        del running[run]
                    elif time.monotonic() > deadline:
                        del running[run]
                        run.error = AssertionError(
                            f"timed out after {RUN_ALL_SECONDS:g} s waiting for all "
                            f"{run.n_code} code cells of {run.name} to run")
                except Exception as exc:  # noqa: BLE001
                    del running[run]
                    run.error = exc
            time.sleep(0.25)
        yield opened
    finally:
        for run in opened.values():
            run.close()


@pytest.mark.parametrize("notebook", _notebooks())
def test_notebook_in_jupyterlab(notebook, runs, lab):
    run = runs[notebook]
    name, page, shot = run.name, run.page, run.shot
    expect = EXPECT.get(name, {})
    try:
        # 1. Run > Run All Cells (done in the fixture, all notebooks at once).
        if run.error is not None:
            raise run.error
        page.screenshot(path=f"{shot}.png")

        # 1b. No prediction's answer on the page before the pick; every prediction picked.
        predictions = check_no_answer_before_the_pick(run) if has_predictions(run.src) else ""

        check_saved_without_errors(page, lab.root / name)

        found = check_widgets_render(run, expect.get("widgets", []))
        drawn = check_figures(run, expect.get("figure", False))

        # 5. Turning the knobs re-runs real workers and updates the output area.
        exercised, widget_images = exercise_widgets(page, name)
        page.screenshot(path=f"{shot}-widgets.png")
        assert widget_images or not expect.get("widget_figure"), \
            f"{name}: no widget drew a figure; its explorer draws one"
        assert not run.page_errors, f"{name}: JavaScript errors in the page: {run.page_errors}"
        print(f"{name}: {run.n_code} code cells ran in {run.seconds:.1f} s; {drawn} figures "
              f"drawn; widgets { {k: v for k, v in found.items() if k != 'broken'} }; "
              f"exercised: {exercised} ({widget_images} figures); "
              f"screenshots {shot.relative_to(ROOT)}*.png")
        if predictions:
            print(predictions)
    except BaseException:
        try:
            if page is not None:
                page.screenshot(path=f"{shot}-failed.png")
        except Exception:  # noqa: BLE001 - the screenshot is a bonus
            pass
        raise
    finally:
        run.close()     # its kernel down now: the next notebook's checks get the CPU


def check_saved_without_errors(page, saved):
    """2. No errors, in the notebook as JupyterLab saves it (File > Save)."""
    before = saved.stat().st_mtime_ns
    run_menu_command(page, "File", "Save( Notebook)?")
    wait_until(lambda: saved_since(saved, before), 30, f"{saved.name} to be saved")
    problems = saved_errors(saved)
    assert not problems, f"{saved.name} ran with errors:\n" + "\n".join(problems)


def check_widgets_render(run, expected: list) -> dict:
    """3. The widgets render as widgets (views appear asynchronously after the output), in
    every cell whose committed output is a widget, with the controls the lesson describes."""
    page = run.page

    def widgets_ready():
        w, states_now = rendered_widgets(page), cell_states(page)
        controls = w["dropdown"] + w["slider"] + w["button"] + w["choice"]
        missing = [f"{kind} {label!r}" for kind, label in expected
                   if label not in w[kind] and not (kind == "output" and w[kind])]
        missing += [f"a widget in code cell {i + 1}" for i, k in enumerate(run.committed)
                    if "widget" in k and not states_now[i]["widgets"]]
        return (controls and not missing and not w["broken"]) and w
    try:
        return wait_until(widgets_ready, 30, f"the ipywidgets of {run.name} to render")
    except AssertionError:
        raise AssertionError(
            f"{run.name}: widgets did not render as expected; expected "
            f"{expected or 'at least one control'} (and one in each cell that has one in "
            f"the committed notebook), found {rendered_widgets(page)}") from None


def check_figures(run, lesson_has_figures: bool) -> int:
    """4. Matplotlib figures: a loaded <img> in every cell whose committed output has one
    (and at least one where the lesson has figures), each really drawn. Returns how many."""
    page = run.page

    def loaded():
        drawn = [any(im["complete"] and im["w"] > 0 for im in s["images"])
                 for s in cell_states(page)]
        missing = [i + 1 for i, k in enumerate(run.committed) if "image" in k and not drawn[i]]
        return not missing and (any(drawn) or not lesson_has_figures)
    wait_until(loaded, 15, f"the matplotlib figures (an <img> in an output) of {run.name}")
    cells = page.locator(f"{PANEL} .jp-Notebook .jp-Cell.jp-CodeCell")
    problems = [p for i in range(cells.count())
                for p in image_problems(cells.nth(i), f"{run.name}, code cell {i + 1}")]
    assert not problems, "figures that are not drawn:\n" + "\n".join(problems)
    # :visible: an image held until a prediction is picked is not on screen yet.
    imgs = page.locator(f"{PANEL} .jp-OutputArea-output img:visible")
    if imgs.count():
        imgs.first.scroll_into_view_if_needed()
        page.screenshot(path=f"{run.shot}-figure.png")
    return imgs.count()
