"""`make lab` works on the learner's copies; `make reset` gives a fresh one and loses nothing."""

import pytest

from labs.harness import copies


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
