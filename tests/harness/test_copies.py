"""`make lab` works on the learner's copies; `make reset` gives a fresh one and loses nothing,
refuses while the lesson is open in a JupyterLab tab (the tab would save over it) and shuts
down a kernel left running after its tab was closed."""
import http.server
import json
import os
import threading
from pathlib import Path

import nbformat
import pytest

from labs.harness.commands import copies

ANSWER = "claim holds: both ranks block in send"


def reference_lesson(name: str) -> nbformat.NotebookNode:
    """A lesson as the course commits it: run, with its outputs and its widgets' state."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "m1": {"model_name": "OutputModel", "state": {"outputs": [ANSWER]}}}}}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# the reference {name}"),
                nbformat.v4.new_code_cell("check('sends_block')", execution_count=3, outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text=ANSWER + "\n")])]
    return nb


@pytest.fixture
def course(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("00_welcome.ipynb", "05_ring_all_reduce.ipynb"):
        nbformat.write(reference_lesson(name), notebooks / name)
    monkeypatch.setattr(copies, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(copies, "YOURS", notebooks / "yours")
    return notebooks


def test_copies_are_made_once_and_never_overwritten(course):
    assert [p.name for p in copies.copy_missing()] == ["00_welcome.ipynb",
                                                       "05_ring_all_reduce.ipynb"]
    mine = course / "yours" / "05_ring_all_reduce.ipynb"
    mine.write_text("my work")
    assert copies.copy_missing() == []
    assert mine.read_text() == "my work"
    assert "reference" in (course / "05_ring_all_reduce.ipynb").read_text()


def test_a_learners_copy_is_the_lesson_without_its_answers(course):
    copies.copy_missing()
    reference = nbformat.read(course / "05_ring_all_reduce.ipynb", as_version=4)
    for mine in (course / "yours" / "05_ring_all_reduce.ipynb", copies.reset("05")):
        text = mine.read_text()
        assert ANSWER not in text, f"{mine.name} holds the reference run's output"
        copy = nbformat.read(mine, as_version=4)
        assert [c.source for c in copy.cells] == [c.source for c in reference.cells]
        assert [c.get("id") for c in copy.cells] == [c.get("id") for c in reference.cells]
        code = [c for c in copy.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code)
        assert "widgets" not in copy.metadata
    assert ANSWER in (course / "05_ring_all_reduce.ipynb").read_text()   # reference kept


def test_reset_backs_up_the_learners_copy(course):
    copies.copy_missing()
    (course / "yours" / "05_ring_all_reduce.ipynb").write_text("my work")
    fresh = copies.reset("5")
    assert "reference" in fresh.read_text()
    backups = list((course / "yours" / "backup").glob("05_ring_all_reduce-*.ipynb"))
    assert [b.read_text() for b in backups] == ["my work"]


def test_reset_of_an_unknown_lesson_says_which_exist(course):
    with pytest.raises(SystemExit, match="the lessons are 00, 05"):
        copies.reset("42")


def test_the_learners_copies_are_ignored_by_git_and_pytest():
    root = copies.NOTEBOOKS.parent
    assert "notebooks/yours/" in (root / ".gitignore").read_text().splitlines()
    assert 'collect_ignore = ["notebooks/yours"]' in (root / "conftest.py").read_text()


def test_reset_with_a_lesson_that_is_not_a_number_is_one_clear_line(course):
    # SystemExit(message): Python prints the message alone on stderr and exits with 1.
    with pytest.raises(SystemExit) as info:
        copies.main(["--reset", "abc"])
    assert info.value.code == ("make reset LESSON=abc: LESSON is a lesson's number, one of "
                               "00, 05 (e.g. make reset LESSON=05)")
    assert not (course / "yours").exists()


class _Jupyter(http.server.BaseHTTPRequestHandler):
    """The two questions reset asks a Jupyter server, answered as JupyterLab does (paths
    relative to its root_dir): /api/sessions (kernels; DELETE shuts one down) and
    /lab/api/workspaces (open tabs). The real server: tests/browser/test_reset.py."""

    tabs: list = []             # paths open in a tab
    kernels: list = []          # paths with a running kernel
    deleted: list = []

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") != "token secret":
            self.send_error(403)
            return False
        return True

    def _json(self, value) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        if not self._authorized():
            return
        if self.path == "/api/sessions":
            self._json([{"id": f"s{i}", "path": p, "name": Path(p).name, "type": "notebook",
                         "kernel": {"id": f"k{i}", "name": "python3", "connections": 0}}
                        for i, p in enumerate(self.kernels)])
        elif self.path == "/lab/api/workspaces":
            data = {f"notebook:{p}": {"data": {"path": p, "factory": "Notebook"}}
                    for p in self.tabs}
            self._json({"workspaces": {"ids": ["default"], "values": [{"data": data}]}})
        else:
            self.send_error(404)

    def do_DELETE(self):  # noqa: N802
        if not self._authorized():
            return
        index = int(self.path.rsplit("/s", 1)[1])
        type(self).deleted.append(self.kernels[index])
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def jupyter_server(tmp_path, monkeypatch):
    """A server answering Jupyter's APIs, announced in a runtime directory the way
    jupyter_server announces itself (jpserver-<pid>.json)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Jupyter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    url = f"http://127.0.0.1:{server.server_port}/"
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(
        {"pid": os.getpid(), "url": url, "token": "secret", "root_dir": str(tmp_path)}))
    yield _Jupyter
    server.shutdown()
    thread.join(10)
    server.server_close()
    _Jupyter.tabs, _Jupyter.kernels, _Jupyter.deleted = [], [], []


LESSON_05 = "notebooks/yours/05_ring_all_reduce.ipynb"


def test_reset_refuses_while_the_lesson_is_open_in_a_tab(course, jupyter_server):
    copies.copy_missing()
    mine = course / "yours" / "05_ring_all_reduce.ipynb"
    mine.write_text("my work")
    jupyter_server.tabs = [LESSON_05]                   # Kernel > Shut Down, tab still open
    with pytest.raises(SystemExit) as info:
        copies.reset("05")
    said = str(info.value.code)
    assert said.startswith(f"{LESSON_05} is open in a JupyterLab tab (")
    assert "Its kernel is already shut down." in said
    assert "close the tab 05_ring_all_reduce.ipynb (the x on the tab)" in said
    assert "click Save" in said and "Run `make reset LESSON=05` again." in said
    assert mine.read_text() == "my work"                 # nothing changed, nothing lost
    assert not (course / "yours" / "backup").exists()
    jupyter_server.kernels = [LESSON_05]                 # tab and kernel: still refused
    with pytest.raises(SystemExit, match="Its kernel is still running: the reset shuts it"):
        copies.reset("05")
    assert jupyter_server.deleted == [] and mine.read_text() == "my work"
    jupyter_server.tabs = ["notebooks/yours/00_welcome.ipynb"]   # only another lesson's tab
    jupyter_server.kernels = []
    assert "reference" in copies.reset("05").read_text()


def test_reset_shuts_down_a_kernel_left_without_a_tab(course, jupyter_server, capsys):
    copies.copy_missing()
    (course / "yours" / "05_ring_all_reduce.ipynb").write_text("my work")
    jupyter_server.kernels = ["notebooks/yours/00_welcome.ipynb", LESSON_05]  # tabs closed
    assert "reference" in copies.reset("05").read_text()
    assert jupyter_server.deleted == [LESSON_05]         # only this lesson's kernel
    out = capsys.readouterr().out
    assert f"JupyterLab's kernel for {LESSON_05} was still running (its tab is closed): " \
           f"shut it down" in out
    backups = list((course / "yours" / "backup").glob("05_ring_all_reduce-*.ipynb"))
    assert [b.read_text() for b in backups] == ["my work"]
