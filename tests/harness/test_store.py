"""labs/harness/commands/store.py: a re-run notebook's diff shows the edit, not the run.
(The whole command, on a real notebook: re-running lesson 07 twice left an empty diff.)"""
import copy
import uuid

import nbformat

from labs.harness.commands import store

VIEW = store.WIDGET_VIEW


def _notebook(ids, timing="0.41 s", image="AAAA", ignored=True, source="show()"):
    """Two widget models (a box holding a label), a timing cell and a plot cell."""
    box, label = ids
    nb = nbformat.v4.new_notebook()
    view = nbformat.v4.new_output("display_data", data={VIEW: {"model_id": box}})
    timed = nbformat.v4.new_code_cell(source, outputs=[view, nbformat.v4.new_output(
        "stream", name="stdout", text=timing)], id="timed")
    if ignored:
        timed.metadata["tags"] = [store.IGNORED]
    plot = nbformat.v4.new_code_cell("plot()", id="plot", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": image, "text/plain": "<Figure>"})])
    nb.cells = [timed, plot]
    nb.metadata["widgets"] = {store.WIDGET_STATE: {"state": {
        box: {"model_name": "VBoxModel", "state": {"children": [f"IPY_MODEL_{label}"]}},
        label: {"model_name": "LabelModel", "state": {"value": timing}}}}}
    return nb


def test_widget_ids_are_the_same_on_every_run():
    runs = [store.steady_widget_ids(_notebook((uuid.uuid4().hex, uuid.uuid4().hex)), "07_x")
            for _ in range(2)]
    assert runs[0] == runs[1]
    box = runs[0].cells[0].outputs[0]["data"][VIEW]["model_id"]
    assert store._states(runs[0])[box]["state"]["children"][0].startswith("IPY_MODEL_")


def test_what_varies_by_nature_is_kept_from_the_stored_run():
    ids = (uuid.uuid4().hex, uuid.uuid4().hex)
    stored = _notebook(ids)
    new = _notebook(ids, timing="0.52 s", image="BBBB")
    store.keep_what_varies_by_nature(new, stored)
    assert new == stored


def test_an_edit_is_taken():
    ids = (uuid.uuid4().hex, uuid.uuid4().hex)
    stored = _notebook(ids, ignored=False)
    edited = _notebook(ids, timing="0.52 s", ignored=False, source="show(2)")
    new = copy.deepcopy(edited)
    store.keep_what_varies_by_nature(new, stored)
    assert new.cells[0] == edited.cells[0]              # its source changed: this run's outputs
    plot = _notebook(ids, image="BBBB")
    plot.cells[1].outputs[0]["data"]["text/plain"] = "<Figure 2>"
    new = copy.deepcopy(plot)
    store.keep_what_varies_by_nature(new, stored)
    assert new.cells[1] == plot.cells[1]                # more than the image changed
