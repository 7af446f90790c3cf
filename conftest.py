"""pytest configuration shared by the tests and the notebook run (nbval).

* The notebooks (and any kernel pytest starts) run the reference solutions: the
  committed outputs are the solutions' outputs. See labs/harness/ranks/exercises.py
  (SOLUTIONS_ENV).
* `--impl=labs|solutions` chooses what the graders in tests/graders/ grade (default:
  solutions; `make check` passes --impl=labs to grade your own code).
* `--lane=test` is `make test`: it leaves out the tests marked `all_lane` (pytest.ini), which
  `make test-all` (`--lane=all`, the default) runs as well. A grader in tests/graders/ is
  marked `all_lane` here at every world size but its fast ones (the smallest and 5), and so
  is a doctor test that runs a job (marked slow) but is no rule's test (`rule`, pytest.ini):
  make test keeps one hazard and its fixed twin per rule the doctor reports.
"""
import os
import shutil
import tempfile

from xdist.scheduler import LoadFileScheduling

from labs.harness.ranks.exercises import SOLUTIONS_ENV
from labs.harness.once import SESSION_ENV

# Your own copies of the lessons (make lab) are yours, not the course's tests.
collect_ignore = ["notebooks/yours"]

# make test's one browser test: the first notebook a reader opens, with its widgets (a slider,
# a button, their output) in real JupyterLab. Every other test under tests/browser/ is all_lane.
BROWSER_IN_MAKE_TEST = "notebooks/00_welcome.ipynb"
BROWSER_NOTEBOOKS_ENV = "P2P_COURSE_BROWSER_NOTEBOOKS"    # tests/browser/test_jupyterlab.py

os.environ.setdefault(SOLUTIONS_ENV, "1")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")   # quiet ipykernel debugger
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")


# The work units that take longest, longest first: they start before everything else, so
# that none of them is still running alone at the end. (xdist starts the files with the
# most tests first; each of these is a unit of one to a dozen tests, measured by --durations:
# in make test-all the browser's Run All of every notebook with a widget, its predictions
# read and its knobs turned, about 500 s, set-up included; then, the longest of make test,
# notebook 11's learner run about 80 s, make check end to end 160 s.)
LONGEST_FIRST = (
    "tests/browser/test_jupyterlab.py",
    "tests/notebooks/test_learner_run.py::test_runs_to_the_end_unsolved[11_your_own_job.ipynb]",
    "tests/harness/test_make_check.py",
)


# Files whose every test is a work unit of its own: each notebook's learner run (one to
# two minutes each), and the graders' catalogue (hundreds of tests, the longest file): the
# workers share them, and the catalogue's many short units fill the run's end.
SPLIT_PER_TEST = ("tests/notebooks/test_learner_run.py::", "tests/harness/test_graders.py::")


class _LoadFileLearnerRunsApart(LoadFileScheduling):
    """`--dist loadfile`, except that SPLIT_PER_TEST's tests are work units of their own, and
    LONGEST_FIRST's units start first."""

    def _split_scope(self, nodeid):
        if nodeid.startswith(SPLIT_PER_TEST):
            return nodeid
        return super()._split_scope(nodeid)

    def _assign_work_unit(self, node):
        # xdist hands out the queue's first unit: put the longest there first.
        for scope in reversed(LONGEST_FIRST):
            if scope in self.workqueue:
                self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


class _Scheduling:
    """Registered only when xdist is active (`-p no:xdist` does not know the hook)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadfile":
            return _LoadFileLearnerRunsApart(config, log)
        return None


def pytest_configure(config):
    # The session's folder of runs made once (labs/harness/once.py: doctor jobs, claims), made
    # by the controller before xdist starts its workers: they and their notebooks' kernels
    # inherit it and share one run per job, one per claim.
    if not hasattr(config, "workerinput") and SESSION_ENV not in os.environ:
        os.environ[SESSION_ENV] = config._p2p_session = tempfile.mkdtemp(prefix="p2p-session-")
    if config.getoption("--lane") == "test":
        # The browser test opens the notebooks it is given, before any test is selected.
        os.environ.setdefault(BROWSER_NOTEBOOKS_ENV, BROWSER_IN_MAKE_TEST)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Scheduling(), "p2p-learner-runs-apart")


def pytest_unconfigure(config):
    folder = getattr(config, "_p2p_session", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(SESSION_ENV, None)


def pytest_addoption(parser):
    parser.addoption("--impl", default="solutions", choices=("labs", "solutions"),
                     help="grade labs/ (your code) or solutions/ (the reference)")
    parser.addoption("--remember", default="", metavar="FILE",
                     help="with --impl=labs (make check): keep grades in FILE and do not run a "
                          "grader again while nothing it depends on has changed")
    parser.addoption("--lesson", default="", metavar="NN",
                     help="with --impl=labs: grade one lesson's exercises, show every problem")
    parser.addoption("--lane", default="all", choices=("test", "all"),
                     help="test: make test's lane, without the tests marked all_lane (the "
                          "graders' catalogue, graders beyond their fast world sizes, all but "
                          "one browser test, the stubs proof, the doctor's jobs beyond one per "
                          "rule); all: everything (make test-all)")
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
    _mark_what_only_test_all_runs(items)
    drop = _other_world_sizes(config, items) + _outside_the_lane(config, items)
    dropped = set(map(id, drop))
    drop += _learner_runs_the_browser_makes([i for i in items if id(i) not in dropped])
    if drop:
        dropped = set(map(id, drop))
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if id(item) not in dropped]


def _mark_what_only_test_all_runs(items):
    """Marks all_lane each grader in tests/graders/ at a world size other than its fast ones
    (the smallest and 5), every test under tests/browser/ but test_notebook_in_jupyterlab,
    which make test runs on BROWSER_IN_MAKE_TEST alone (pytest_configure), and every doctor
    test that runs a job (slow)
    without a `rule` mark: the doctor's catalogue beyond one script per rule (other
    real-code scripts, second examples)."""
    fast = _world_sizes_kept("fast", items)
    for item in items:
        graded = _grader_world_size(item)
        if graded is not None and graded[1] not in fast[graded[0]]:
            item.add_marker("all_lane")
        elif item.nodeid.startswith("tests/browser/") and \
                "::test_notebook_in_jupyterlab[" not in item.nodeid:
            item.add_marker("all_lane")
        elif item.nodeid.startswith("tests/doctor/") and item.get_closest_marker("slow") \
                and not item.get_closest_marker("rule"):
            item.add_marker("all_lane")


def _outside_the_lane(config, items) -> list:
    """--lane=test: the tests marked all_lane (make test-all runs them)."""
    if config.getoption("--lane") == "all":
        return []
    return [item for item in items if item.get_closest_marker("all_lane")]


def _other_world_sizes(config, items) -> list:
    """--world-sizes: of each grader in tests/graders/, the world sizes NOT asked for."""
    wanted = config.getoption("--world-sizes")
    if not wanted:
        return []
    kept = _world_sizes_kept(wanted, items)
    return [item for item in items
            if (graded := _grader_world_size(item)) and graded[1] not in kept[graded[0]]]


def _world_sizes_kept(wanted, items) -> dict:
    """grader -> the world sizes --world-sizes=wanted keeps of it."""
    sizes = {}                           # grader -> its world sizes
    for graded in filter(None, map(_grader_world_size, items)):
        sizes.setdefault(graded[0], []).append(graded[1])
    if wanted not in ("ends", "fast"):
        return {grader: {int(n) for n in wanted.split(",")} for grader in sizes}
    return {grader: {min(have), 5 if wanted == "fast" and 5 in have else max(have)}
            for grader, have in sizes.items()}


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
