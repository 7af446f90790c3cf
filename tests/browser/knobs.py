"""Turning the knobs of every widget in a notebook, as a reader does, and checking what
comes back: fresh output, no traceback, figures that are really drawn."""
from __future__ import annotations

import re

from tests.browser.figures import image_problems
from tests.browser.lab_page import PANEL, kernel_idle, wait_until

# A rendered widget at the top level of a cell output (not the controls nested in it).
WIDGET_ROOT = ".jp-OutputArea-output > .jupyter-widgets"
RUN_BUTTON = re.compile(r"^\s*Run( Interact)?\s*$")     # a Button, or interact_manual's
WIDGET_TIMEOUT = 60.0          # one click on Run: a launch or a deliberate hang demo


def _output_text(box) -> str:
    """The text of the Output area(s) inside one rendered widget (or of the whole box)."""
    outs = box.locator(".widget-output")
    if outs.count():
        return "\n".join(outs.nth(i).inner_text() for i in range(outs.count()))
    return box.inner_text()


def _shown(box) -> tuple:
    """What the widget shows now: its output text and the sources of its images."""
    return _output_text(box), tuple(box.evaluate(
        "(b) => [...b.querySelectorAll('img')].map((i) => i.complete ? i.src : 'loading')"))


def _label(control) -> str:
    label = control.locator(":scope > .widget-label")
    return label.first.inner_text().strip() if label.count() else ""


def exercise_widgets(page, name: str, rounds: int = 2) -> tuple[list[str], int]:
    """For every rendered widget: a prediction gets an answer; a widget with a Run button,
    a dropdown or a slider gets `rounds` turns (change one control, dropdown first, then
    the world-size slider; click Run if there is one). Each turn must show fresh output
    without a traceback, and every image in it must be a drawn figure (the first click
    matters most: it is where a half-drawn figure showed). Returns what was done and how
    many images the widgets showed."""
    boxes = page.locator(f"{PANEL} {WIDGET_ROOT}")
    done, images = [], 0
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if box.locator(".widget-radio-box").count():
            if box.locator(".widget-radio-box input:checked").count():  # picked: left as is
                done.append(f"prediction {i + 1} picked before (its answer checked then)")
            else:
                done.append(answer_prediction(page, box, f"{name}, widget {i + 1}"))
            continue
        dropdowns = box.locator(".widget-dropdown")
        sliders = box.locator(".widget-slider")
        buttons = box.locator("button.jupyter-button", has_text=RUN_BUTTON)
        if not (dropdowns.count() or sliders.count() or buttons.count()):
            continue
        box.scroll_into_view_if_needed()
        knobs = ([("dropdown", dropdowns.first)] if dropdowns.count() else []) + sorted(
            [("slider", sliders.nth(j)) for j in range(sliders.count())],
            key=lambda k: "world" not in _label(k[1]).lower())
        for round_ in range(rounds):
            action, shown = _turn(page, box, knobs, buttons, round_, f"{name}, widget {i + 1}")
            images += shown
            done.append(", ".join(action))
    assert done, f"{name}: no widget control (Run button, dropdown, slider, choice) to use"
    return done, images


def _turn(page, box, knobs, buttons, round_: int, where: str) -> tuple[list[str], int]:
    """One turn of a widget (change a control, click Run): fresh output, no traceback, every
    image a drawn figure. Returns what was done and how many images it showed."""
    action = []
    before = _shown(box)
    if knobs:
        kind, knob = knobs[round_ % len(knobs)]
        action.append(pick_other_option(knob) if kind == "dropdown" else nudge_slider(knob))
    if buttons.count():
        buttons.first.click()
        action.append(f"click {buttons.first.inner_text().strip()!r}")
    what = f"{where}, after {', '.join(action)}"
    text, srcs = wait_for_new_output(page, box, before, what)
    assert "Traceback" not in text, f"{what}: it shows a traceback:\n{text}"
    problems = image_problems(box, what)
    assert not problems, "a figure is not drawn:\n" + "\n".join(problems)
    return action, len(srcs)


def wait_for_new_output(page, box, before: tuple, what: str) -> tuple:
    """Wait until the widget shows something other than `before`, the kernel is idle and
    the same thing twice in a row (its handler has finished printing and drawing)."""
    last = [None]

    def updated():
        now = _shown(box)
        settled, last[0] = now == last[0], now
        return (settled and now != before and any(now) and "loading" not in now[1]
                and kernel_idle(page)) and now
    try:
        return wait_until(updated, WIDGET_TIMEOUT, f"{what}: its output to change",
                          interval=0.3)
    except AssertionError:
        raise AssertionError(f"{what}: its output did not change within {WIDGET_TIMEOUT:g} s;"
                             f" before:\n{before[0]}\nnow:\n{_output_text(box)}") from None


def answer_prediction(page, box, what: str) -> str:
    """Pick the first choice of a predict-then-run widget: once the demo after it has
    run, the widget compares the pick with what the run did."""
    box.scroll_into_view_if_needed()        # cells out of view render no text
    choice = box.locator(".widget-radio-box label").first
    picked = choice.inner_text().strip()
    # Run All has run the demo: the widget must not tell what it did before a pick.
    # (its text is laid out a moment after the cell scrolls into view: wait for some text)
    feedback = box.locator(".widget-html").last
    before = wait_until(lambda: feedback.inner_text().strip(), 20,
                        f"{what}: the prediction widget to show its text")
    assert "Pick" in before and not re.search(r"[Tt]he run:|[Yy]ou predicted", before), \
        f"{what}: the prediction widget shows the answer before any pick: {before!r}"
    choices = box.locator(".widget-radio-box label").all_inner_texts()
    assert not [c for c in choices if c.strip() and c.strip() in before], \
        f"{what}: the prediction widget names a choice before any pick: {before!r}"
    choice.click()
    wait_until(lambda: re.search(r"[Yy]ou predicted", box.inner_text()), 20,
               f"{what}: the prediction widget to compare {picked!r} with the run")
    return f"predict {picked[:40]!r}"


def pick_other_option(dropdown) -> str:
    select = dropdown.locator("select")
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("(s) => s.options[s.selectedIndex].text")
    others = [o for o in options if o != current]
    assert others, f"dropdown {_label(dropdown)!r} has a single option {options}"
    select.select_option(label=others[0])
    return f"dropdown {_label(dropdown)!r} -> {others[0].replace(chr(0xa0), ' ')!r}"


def nudge_slider(slider) -> str:
    """Move an ipywidgets slider one step with the keyboard, as a reader can: down
    (fewer ranks, a faster run), or up when it is at its minimum."""
    handle = slider.locator(".noUi-handle").first
    readout = slider.locator(".widget-readout").first
    before = readout.inner_text().strip()
    handle.focus()
    handle.press("ArrowLeft")
    if readout.inner_text().strip() == before:
        handle.press("ArrowRight")
    return f"slider {_label(slider)!r} {before} -> {readout.inner_text().strip()}"
