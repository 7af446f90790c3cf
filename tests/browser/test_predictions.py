"""No answer before the prediction: a learner's fresh copy, Run All, then the whole page read.

A lesson asks the reader to predict what a demo does (labs/harness/notebook/predict.py),
then runs it. Here each lesson with a prediction is given to real JupyterLab as a learner's
copy (labs/harness/commands/copies.py: no outputs), run with Run > Run All Cells, and the
text the page shows is read (every text node not hidden by CSS or a closed <details>,
editors left out: the reader reads outputs and prose). Then every prediction is picked.

The answers are what the run itself shows once picked, not a list written here:
  * the verdict: each widget's feedback after the pick ("the run: <b>...</b>");
  * the held outputs: every output that was hidden before the pick and opens with it;
  * the folded prose: the text of each closed <details> "Why" block.
None of them may be on the page before the pick, and each must be there after it.
"""
from __future__ import annotations

import json
import re

import pytest

from labs.harness.commands import copies
from tests import course
from tests.browser.lab_page import ARTIFACTS, PANEL, NotebookRun, wait_until

pytestmark = pytest.mark.slow

NOTEBOOKS = [str(lesson.notebook.relative_to(course.ROOT))
             for lesson in course.lessons() if "predict(" in lesson.notebook.read_text()]
RUN_ALL_SECONDS = 240.0
MIN_LINE = 16           # shorter lines ("True", "rank 0:") are not an answer on their own
# The learner's state, not the run's answer: launch_exercise's notice that an exercise is not
# solved yet (the reference runs in its place), said in every cell that launches it.
NOT_AN_ANSWER = re.compile(r"is not solved yet|run (this cell|the widget) again to see your own")

# The page's visible text, editors left out; marks (data-held) the outputs hidden now.
VISIBLE_TEXT_JS = """(panel) => {
  const root = document.querySelector(panel);
  const hidden = (el) => {
    for (; el && el !== root; el = el.parentElement) {
      if (el.classList.contains('jp-InputArea-editor')) return true;
      if (getComputedStyle(el).display === 'none') return true;
      const up = el.parentElement;
      if (up && up.tagName === 'DETAILS' && !up.open && el.tagName !== 'SUMMARY') return true;
    }
    return false;
  };
  root.querySelectorAll('.widget-output').forEach((o) => {
    if (hidden(o)) o.dataset.held = '1'; });
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const shown = [];
  while (walker.nextNode()) {
    const t = walker.currentNode;
    if (t.textContent.trim() && !hidden(t.parentElement)) shown.push(t.textContent);
  }
  return shown.join('\\n');
}"""
# What each held output shows: its text, and a mark per figure in it.
HELD_TEXTS_JS = """(panel) => [...document.querySelectorAll(panel + ' .widget-output[data-held]')]
  .map((o) => o.innerText + '[figure]'.repeat(o.querySelectorAll('img').length))"""
FOLDED_TEXTS_JS = """(panel) => [...document.querySelectorAll(panel + ' .jp-MarkdownOutput details')]
  .map((d) => { d.open = true; const s = d.querySelector('summary');
                return d.innerText.replace(s ? s.innerText : '', ''); })"""


def _lines(texts: list[str]) -> set[str]:
    return {line.strip() for text in texts for line in text.splitlines()
            if len(line.strip()) >= MIN_LINE and not NOT_AN_ANSWER.search(line)}


@pytest.fixture(scope="module")
def full_page(lab):
    """Every cell in the DOM (no windowing): the whole page can be read at once."""
    tracker = lab.base / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    return lab


def run_all(lab, browser, notebook: str) -> NotebookRun:
    run = NotebookRun(lab, notebook)
    run.open(browser)
    copies.learners_copy(run.src, lab.root / run.name)      # what make lab gives a learner
    run.load()
    run.start()
    wait_until(run.finished, RUN_ALL_SECONDS, f"Run All of {run.name}", interval=0.5)
    return run


def pick_every_prediction(page) -> list[str]:
    """Pick the first choice of each prediction; returns what each then says the run did
    beyond its choices' labels (those are on the page by design): its observation."""
    boxes = page.locator(f"{PANEL} .jp-OutputArea-output > .jupyter-widgets").filter(
        has=page.locator(".widget-radio-box"))
    answers = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        box.scroll_into_view_if_needed()
        labels = box.locator(".widget-radio-box label").all_inner_texts()
        box.locator(".widget-radio-box label").first.click()
        said = wait_until(lambda: re.search(r"(?:the run|You predicted it): (.+?)\.(?:\s|$)",
                                            box.inner_text()), 20,
                          f"prediction {i + 1} to show the run's answer")
        verdict = said.group(1).strip()
        choice = next(label.strip() for label in labels if verdict.startswith(label.strip()))
        answers.append(verdict[len(choice):].strip(" ()"))
    return [a for a in answers if a]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_answer_on_the_page_before_the_pick(notebook, full_page, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    run = run_all(full_page, browser, notebook)
    page, name = run.page, run.name
    try:
        before = page.evaluate(VISIBLE_TEXT_JS, PANEL)
        page.screenshot(path=f"{run.shot}-before-pick.png", full_page=True)
        assert not re.search(r"the run:|You predicted", before), \
            f"{name}: a prediction widget shows the run's answer before any pick"
        assert page.locator(f"{PANEL} .widget-radio-box").count(), \
            f"{name}: no prediction widget rendered"
        answers = pick_every_prediction(page)
        held = page.evaluate(HELD_TEXTS_JS, PANEL)
        assert held or answers, (f"{name}: nothing waited for the pick (no held output, no "
                                 f"observation): the demos' outputs were on the page before it")
        assert all(text.strip() for text in held), \
            f"{name}: an output held until the pick is still empty after it: {held}"
        folded = page.evaluate(FOLDED_TEXTS_JS, PANEL)
        given_away = [a for a in answers if a in before] + sorted(
            line for line in _lines(held) | _lines(folded) if line in before)
        assert not given_away, (f"{name}: the page shows an answer before the reader has "
                                f"picked:\n" + "\n".join(given_away))
        after = page.evaluate(VISIBLE_TEXT_JS, PANEL)
        missing = [a for a in answers if a not in after] + sorted(
            line for line in _lines(held) if line not in after)
        assert not missing, f"{name}: not shown after the pick:\n" + "\n".join(missing)
        print(f"{name}: {len(answers)} observations, {len(held)} held outputs, "
              f"{len(folded)} folded blocks; nothing shown before the pick")
    finally:
        run.close()
