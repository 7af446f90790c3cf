"""`make lab` works on the learner's copies; `make reset` gives a fresh one and loses nothing,
and refuses while the lesson is open in JupyterLab (the tab would save over it)."""
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from labs.harness.commands import copies


@pytest.fixture
def course(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("00_welcome.ipynb", "05_ring_all_reduce.ipynb"):
        (notebooks / name).write_text(f'{{"reference": "{name}"}}')
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


class _Sessions(http.server.BaseHTTPRequestHandler):
    """/api/sessions as a Jupyter server answers it (paths relative to its root_dir)."""

    open_paths: list = []

    def do_GET(self):  # noqa: N802
        if not self.path.startswith("/api/sessions?token=secret"):
            self.send_error(403)
            return
        body = json.dumps([{"id": str(i), "path": p, "name": Path(p).name, "type": "notebook",
                            "kernel": {"name": "python3"}}
                           for i, p in enumerate(self.open_paths)]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def jupyter_server(tmp_path, monkeypatch):
    """A server answering Jupyter's sessions API, announced in a runtime directory the way
    jupyter_server announces itself (jpserver-<pid>.json)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Sessions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    url = f"http://127.0.0.1:{server.server_port}/"
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(
        {"pid": os.getpid(), "url": url, "token": "secret", "root_dir": str(tmp_path)}))
    yield _Sessions
    server.shutdown()
    thread.join(10)
    server.server_close()
    _Sessions.open_paths = []


def test_reset_refuses_while_the_lesson_is_open_in_jupyterlab(course, jupyter_server):
    copies.copy_missing()
    mine = course / "yours" / "05_ring_all_reduce.ipynb"
    mine.write_text("my work")
    jupyter_server.open_paths = ["notebooks/yours/05_ring_all_reduce.ipynb"]
    with pytest.raises(SystemExit, match=r"is open in JupyterLab .*Close its tab first"):
        copies.reset("05")
    assert mine.read_text() == "my work"                 # nothing changed, nothing lost
    assert not (course / "yours" / "backup").exists()
    jupyter_server.open_paths = ["notebooks/yours/00_welcome.ipynb"]   # another lesson open
    assert "reference" in copies.reset("05").read_text()
