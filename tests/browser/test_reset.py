"""`make reset` against real JupyterLab: the three states a learner's lesson can be in.

A real JupyterLab server (tests/browser/lab_server.py) serves a course folder of its own
(notebooks/ with lesson 04, notebooks/yours/ with the learner's copy, which holds a cell
of their own work); Chromium opens the copy as a learner does. Then:

  (a) the tab open, its kernel running: reset refuses, says to close the tab, and changes
      nothing; doing what it says (the x on the tab, Save) and running it again shuts the
      kernel down, backs the work up and gives the fresh copy;
  (b) the tab closed with its x, the kernel still running: reset shuts the kernel down
      (and says so), backs the work up, gives the fresh copy;
  (c) Kernel > Shut Down with the tab still open: reset refuses (the tab would save over
      the fresh copy, through JupyterLab's "File Changed" dialog); closing the tab, then
      reset, works.

Each ends with the learner's work in yours/backup/ and JupyterLab showing the fresh copy
when the lesson is opened again (and saving it with no "File Changed" dialog).
"""
from __future__ import annotations

import io
import re
import time
from contextlib import redirect_stdout

import nbformat
import pytest

from labs.harness.commands import copies, jupyter_open
from tests.browser.lab_page import ARTIFACTS, PANEL, kernel_idle, run_menu_command, wait_until
from tests.browser.lab_server import TOKEN

pytestmark = pytest.mark.slow

LESSON = "04_deadlock_hazards.ipynb"
MINE = f"notebooks/yours/{LESSON}"
REFERENCE, MY_WORK = "lesson 04 as the course ships it", "my own work on lesson 04"


def notebook(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {text}"),
                nbformat.v4.new_code_cell(f"print({text!r})")]
    return nb


@pytest.fixture
def course(lab, monkeypatch):
    """The served folder as a course: the lesson, and the learner's copy with their work."""
    notebooks = lab.root / "notebooks"
    (notebooks / "yours" / "backup").mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook(REFERENCE), notebooks / LESSON)
    nbformat.write(notebook(MY_WORK), notebooks / "yours" / LESSON)
    for old in (notebooks / "yours" / "backup").iterdir():
        old.unlink()
    monkeypatch.setattr(copies, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(copies, "YOURS", notebooks / "yours")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(lab.base / "runtime"))
    yield notebooks
    lab.shutdown_kernel(MINE)


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def holder(course):
    found = jupyter_open.holders(course / "yours" / LESSON)
    return found[0] if found else None


def open_lesson(page, lab, course) -> None:
    """Open the learner's copy in JupyterLab; wait for its kernel and for the workspace
    (saved a moment after the layout changes) to list its tab."""
    page.goto(f"{lab.url}/lab/tree/{MINE}?reset&token={TOKEN}")
    page.locator(f"{PANEL} .jp-Notebook .jp-CodeCell").first.wait_for(timeout=60_000)
    wait_until(lambda: kernel_idle(page), 60, "the lesson's kernel to start")
    wait_until(lambda: (h := holder(course)) and h.tab_open, 15,
               "JupyterLab's workspace to list the open tab")


def close_tab(page, course) -> None:
    """The x on the lesson's tab, as a learner closes it; Save if JupyterLab asks."""
    tab = page.locator(".lm-DockPanel .lm-TabBar-tab", has_text=LESSON).first
    tab.hover()
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    save = page.locator(".jp-Dialog button", has_text=re.compile(r"^\s*Save\s*$"))
    try:
        save.wait_for(timeout=3_000)
        save.click()
    except Exception:  # noqa: BLE001 - a tab with nothing unsaved closes without asking
        pass
    wait_until(lambda: not ((h := holder(course)) and h.tab_open), 15,
               "JupyterLab's workspace to drop the closed tab")


def reset() -> str:
    said = io.StringIO()
    with redirect_stdout(said):
        copies.reset("04")
    return said.getvalue()


def refused() -> str:
    with pytest.raises(SystemExit) as info:
        reset()
    return str(info.value.code)


def assert_reset_done(course, page, lab) -> None:
    """The work is in backup/, the copy is fresh, and JupyterLab shows the fresh copy and
    saves it without a "File Changed" dialog."""
    backups = list((course / "yours" / "backup").glob("04_deadlock_hazards-*.ipynb"))
    assert len(backups) == 1 and MY_WORK in backups[0].read_text()
    mine = course / "yours" / LESSON
    assert REFERENCE in mine.read_text() and MY_WORK not in mine.read_text()
    assert holder(course) is None or not holder(course).kernel_running
    open_lesson(page, lab, course)
    shown = page.locator(PANEL).inner_text()
    assert REFERENCE in shown and MY_WORK not in shown
    before = mine.stat().st_mtime_ns
    run_menu_command(page, "File", "Save( Notebook)?")
    wait_until(lambda: mine.stat().st_mtime_ns > before or page.locator(".jp-Dialog").count(),
               15, "JupyterLab to save the fresh copy")
    time.sleep(0.5)
    assert not page.locator(".jp-Dialog").count(), \
        f"a dialog after saving the fresh copy: {page.locator('.jp-Dialog').inner_text()}"
    assert REFERENCE in mine.read_text() and MY_WORK not in mine.read_text()


def assert_refusal(said: str, kernel: str) -> None:
    assert said.startswith(f"{MINE} is open in a JupyterLab tab (http://127.0.0.1:")
    assert kernel in said
    assert f"1. In JupyterLab, close the tab {LESSON} (the x on the tab)." in said
    assert "click Save" in said and "2. Run `make reset LESSON=04` again." in said
    # the running server's page, token included (`make lab` again would start a second)
    page = r"open http://127.0.0.1:\d+/lab/tree/\S*" + LESSON + r"\?token=" + TOKEN + " "
    assert re.search(page, said), said


def test_a_tab_open_is_refused_with_the_way_out(course, page, lab):
    open_lesson(page, lab, course)
    said = refused()
    assert_refusal(said, "Its kernel is still running: the reset shuts it down for you")
    assert MY_WORK in (course / "yours" / LESSON).read_text()       # nothing changed
    assert not list((course / "yours" / "backup").iterdir())
    close_tab(page, course)                                          # what it says to do
    out = reset()
    assert f"JupyterLab's kernel for {MINE} was still running (its tab is closed): " \
           f"shut it down" in out
    assert_reset_done(course, page, lab)
    page.screenshot(path=str(ARTIFACTS / "reset-a-tab-open.png"))


def test_a_kernel_left_without_its_tab_is_shut_down(course, page, lab):
    open_lesson(page, lab, course)
    close_tab(page, course)
    assert holder(course).kernel_running                     # the x leaves the kernel running
    out = reset()
    assert f"JupyterLab's kernel for {MINE} was still running (its tab is closed): " \
           f"shut it down" in out
    assert not [s for s in lab.api("GET", "/api/sessions") if s["path"] == MINE]
    assert_reset_done(course, page, lab)


def test_a_tab_open_with_its_kernel_shut_down_is_refused(course, page, lab):
    open_lesson(page, lab, course)
    run_menu_command(page, "Kernel", "Shut Down Kernel")
    confirm = page.locator(".jp-Dialog button", has_text=re.compile(r"Shut Down"))
    try:
        confirm.wait_for(timeout=3_000)
        confirm.click()
    except Exception:  # noqa: BLE001 - no confirmation asked
        pass
    wait_until(lambda: not holder(course).kernel_running, 15, "the kernel to shut down")
    said = refused()
    assert_refusal(said, "Its kernel is already shut down.")
    assert MY_WORK in (course / "yours" / LESSON).read_text()
    close_tab(page, course)
    out = reset()
    assert "was still running" not in out
    assert_reset_done(course, page, lab)
