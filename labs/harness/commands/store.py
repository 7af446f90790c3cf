"""Re-run a committed notebook and store it so that its diff shows the edit, not the run.

A notebook is committed with the solutions' outputs (README, maintainers). Run again, some of
them change by nature: the ids ipywidgets gives its models (random on every run), a plot of
timings, a cell whose output nbval ignores (`nbval-ignore-output`: timings, widget views).
This command executes the notebook as the README's nbconvert line does (the solutions, no
run timestamps), then:

- renames every widget model to an id made from the notebook's name and the model's place
  (first seen in the outputs, in cell order, then through the models that refer to it), so
  the same widgets get the same ids on every run;
- for a code cell whose source did not change, keeps the stored outputs where they differ
  by nature only: all of them in a cell nbval ignores, and an image whose output is otherwise
  the same (same kind, same text), since an image of timings is never twice the same;
- for a widget whose model did not change its kind or fields, keeps the stored state where
  only values differ (a timing shown in a widget, an Output widget's plot).

`--fresh` takes every output of this run (after a change to a view's plot, a widget's
fields, a timing's format). Either way strict nbval and tests/notebooks/ check the result.

    python -m labs.harness.commands.store 07        # notebooks/07_*.ipynb, in place
    python -m labs.harness.commands.store 07 --fresh
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import uuid
from pathlib import Path

import nbformat

from labs.harness import COURSE_ROOT

NOTEBOOKS = COURSE_ROOT / "notebooks"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
IGNORED = "nbval-ignore-output"
MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})")


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook run top to bottom against the solutions, as the README's line does."""
    from nbconvert.preprocessors import ExecutePreprocessor
    os.environ["P2P_COURSE_SOLUTIONS"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(COURSE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    nb = nbformat.read(path, as_version=4)
    ExecutePreprocessor(timeout=None, record_timing=False).preprocess(
        nb, {"metadata": {"path": str(path.parent)}})
    return nb


def _states(nb) -> dict:
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def _models_in_order(nb) -> list[str]:
    """Every widget model id: the views in the outputs in cell order, then what each refers
    to (its fields in sorted order), then any model nothing shows (by kind and state)."""
    states, seen = _states(nb), []
    todo = [out["data"][WIDGET_VIEW]["model_id"] for cell in nb.cells
            for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    while todo:
        model = todo.pop(0)
        if model in seen:
            continue
        seen.append(model)
        fields = states.get(model, {}).get("state", {})
        todo += MODEL_REF.findall(json.dumps(fields, sort_keys=True))
    rest = sorted((m for m in states if m not in seen),
                  key=lambda m: json.dumps(states[m], sort_keys=True))
    return seen + rest


def steady_widget_ids(nb, name: str) -> nbformat.NotebookNode:
    """The same notebook with every widget model renamed by its place (see above)."""
    names = {old: uuid.uuid5(uuid.NAMESPACE_URL, f"{name}#{i}").hex
             for i, old in enumerate(_models_in_order(nb))}
    text = re.sub(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])",    # also inside IPY_MODEL_<id>
                  lambda m: names.get(m[0], m[0]), json.dumps(nb))
    renamed = nbformat.from_dict(json.loads(text))
    if _states(renamed):
        state = renamed.metadata.widgets[WIDGET_STATE]
        state["state"] = dict(sorted(state["state"].items()))
    return renamed


def _same_but_images(new: dict, old: dict) -> bool:
    """Two outputs of one kind whose only differences are images."""
    if new.get("output_type") != old.get("output_type"):
        return False
    strip = [{k: v for k, v in o.items() if k != "data"} | {"data": {
        m: v for m, v in o.get("data", {}).items() if not m.startswith("image/")}}
        for o in (new, old)]
    return strip[0] == strip[1] and set(new.get("data", {})) == set(old.get("data", {}))


def keep_what_varies_by_nature(new, old) -> None:
    """In `new`, put back the stored outputs of unchanged cells that differ by nature only,
    and the stored values of widgets whose kind and fields did not change."""
    before = {cell.get("id"): cell for cell in old.cells if cell.cell_type == "code"}
    for cell in (c for c in new.cells if c.cell_type == "code"):
        was = before.get(cell.get("id"))
        if was is None or was.source != cell.source:
            continue
        if IGNORED in cell.metadata.get("tags", []):
            cell.outputs = copy.deepcopy(was.outputs)
        elif len(cell.outputs) == len(was.outputs):
            cell.outputs = [copy.deepcopy(o) if _same_but_images(n, o) else n
                            for n, o in zip(cell.outputs, was.outputs)]
    stored = _states(old)
    for model, state in _states(new).items():
        was = stored.get(model)
        if was and was.get("model_name") == state.get("model_name") and \
                set(was.get("state", {})) == set(state.get("state", {})):
            state["state"] = copy.deepcopy(was["state"])


def store(path: Path, fresh: bool = False) -> None:
    old = nbformat.read(path, as_version=4)
    new = steady_widget_ids(execute(path), path.stem)
    if not fresh:
        keep_what_varies_by_nature(new, old)
    nbformat.write(new, path)


def _notebook(number: str) -> Path:
    found = sorted(NOTEBOOKS.glob(f"{int(number):02d}_*.ipynb")) if number.isdigit() else []
    if not found:
        raise SystemExit(f"no lesson {number!r} in notebooks/ (give its number: 07)")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lessons", nargs="+", help="lesson numbers, e.g. 07")
    parser.add_argument("--fresh", action="store_true", help="take every output of this run")
    args = parser.parse_args(argv)
    for number in args.lessons:
        path = _notebook(number)
        store(path, fresh=args.fresh)
        print(f"stored {path.relative_to(COURSE_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
