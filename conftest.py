"""pytest configuration shared by the tests and the notebook run (nbval).

* The notebooks (and any kernel pytest starts) run the reference solutions: the
  committed outputs are the solutions' outputs. See labs/harness/ranks/exercises.py
  (SOLUTIONS_ENV).
* `--impl=labs|solutions` chooses what the graders in tests/graders/ grade (default:
  solutions; `make check` passes --impl=labs to grade your own code).
"""
import os
import shutil

from xdist.scheduler import LoadFileScheduling

from labs.harness.ranks.exercises import SOLUTIONS_ENV

# Your own copies of the lessons (make lab) are yours, not the course's tests.
collect_ignore = ["notebooks/yours"]

os.environ.setdefault(SOLUTIONS_ENV, "1")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")   # quiet ipykernel debugger
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")


class _LoadFileLearnerRunsApart(LoadFileScheduling):
    """`--dist loadfile`, except that each notebook's learner run (tests/notebooks/) is a
    work unit of its own, so the two workers share them."""

    def _split_scope(self, nodeid):
        if nodeid.startswith("tests/notebooks/test_learner_run.py::"):
            return nodeid
        return super()._split_scope(nodeid)


class _Scheduling:
    """Registered only when xdist is active (`-p no:xdist` does not know the hook)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadfile":
            return _LoadFileLearnerRunsApart(config, log)
        return None


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Scheduling(), "p2p-learner-runs-apart")


def pytest_addoption(parser):
    parser.addoption("--impl", default="solutions", choices=("labs", "solutions"),
                     help="grade labs/ (your code) or solutions/ (the reference)")
    parser.addoption("--remember", default="", metavar="FILE",
                     help="with --impl=labs (make check): keep grades in FILE and do not run a "
                          "grader again while nothing it depends on has changed")
    parser.addoption("--lesson", default="", metavar="NN",
                     help="with --impl=labs: grade one lesson's exercises, show every problem")
    parser.addoption("--world-sizes", default="", metavar="LIST",
                     help="run each grader only at these world sizes (e.g. 1,3), 'ends': its "
                          "smallest and largest (the grading loop's own tests), or 'fast': its "
                          "smallest and 5 (not a power of two: a fold, a rank that sits out)")


def _grader_world_size(item):
    """(grader, world size) of a test in tests/graders/ run at one world size, else None."""
    size = item.callspec.params.get("world_size") if hasattr(item, "callspec") else None
    if size is None or "tests/graders/" not in item.nodeid:
        return None
    return item.nodeid.split("[")[0], size


def pytest_collection_modifyitems(config, items):
    drop = _other_world_sizes(config, items) + _learner_runs_the_browser_makes(items)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]


def _other_world_sizes(config, items) -> list:
    """--world-sizes: of each grader in tests/graders/, the world sizes NOT asked for."""
    wanted = config.getoption("--world-sizes")
    if not wanted:
        return []
    sizes = {}                           # grader -> its world sizes
    for graded in filter(None, map(_grader_world_size, items)):
        sizes.setdefault(graded[0], []).append(graded[1])
    drop = []
    for item in items:
        graded = _grader_world_size(item)
        if graded is None:
            continue
        grader, size = graded
        if wanted in ("ends", "fast"):
            largest = 5 if wanted == "fast" and 5 in sizes[grader] else max(sizes[grader])
            chosen = {min(sizes[grader]), largest}
        else:
            chosen = {int(n) for n in wanted.split(",")}
        if size not in chosen:
            drop.append(item)
    return drop


def _learner_runs_the_browser_makes(items) -> list:
    """The learner runs (tests/notebooks/) of the notebooks that the browser test, collected
    in this same session and able to run (Chromium found), runs too: Run All in JupyterLab with
    no exercise solved, failing on the same things (an error or a traceback shown, a cell not
    run, a process left). The notebook is run once, not twice."""
    def notebook(item, test):
        if item.nodeid.split("[")[0].endswith(test) and hasattr(item, "callspec"):
            return os.path.basename(item.callspec.params["notebook"])
        return None
    if not (os.environ.get("CHROMIUM") or shutil.which("chromium")):
        return []
    in_browser = {notebook(item, "::test_notebook_in_jupyterlab") for item in items} - {None}
    return [item for item in items
            if notebook(item, "::test_runs_to_the_end_unsolved") in in_browser]
