"""No answer before the prediction: the page of a learner's copy, read after Run All.

A lesson asks the reader to predict what a demo does (labs/harness/notebook/predict.py),
then runs it. test_jupyterlab.py gives each lesson to real JupyterLab as a learner's copy
(labs/harness/commands/copies.py: no outputs) and runs it with Run > Run All Cells; for a
lesson with a prediction, `check_no_answer_before_the_pick` then reads the text the page
shows (every text node not hidden by CSS or a closed <details>, editors left out: the reader
reads outputs and prose), and picks every prediction.

The answers are what the run itself shows once picked, not a list written here:
  * the verdict: each widget's feedback after the pick ("the run: <b>...</b>");
  * the held outputs: every output that was hidden before the pick and opens with it;
  * the folded prose: the text of each closed <details> "Why" block.
None of them may be on the page before the pick, and each must be there after it.
"""
from __future__ import annotations

import json
import re

from tests.browser.lab_page import PANEL, wait_until

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


def read_whole_pages(lab) -> None:
    """Every cell in the DOM (no windowing), for the pages opened from now on: the whole
    page can be read at once."""
    tracker = lab.base / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


def has_predictions(notebook) -> bool:
    return "predict(" in notebook.read_text()


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


def check_no_answer_before_the_pick(run) -> str:
    """Run All has run `run`'s notebook: nothing the picks reveal was on the page before
    them, and all of it is there after. Returns what was checked, for the test's log."""
    page, name = run.page, run.name
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
    return (f"{name}: {len(answers)} observations, {len(held)} held outputs, "
            f"{len(folded)} folded blocks; nothing shown before the pick")
