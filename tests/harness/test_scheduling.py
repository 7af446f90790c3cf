"""make test's xdist scheduler (conftest.py): a file is a work unit, each notebook's learner
run is one of its own, and the longest units start first, whatever their number of tests."""
from types import SimpleNamespace

import conftest


class FakeWorker:
    """What the scheduler asks of a worker: the indexes of the tests to run, in order."""

    def __init__(self, name):
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes):
        self.sent += indexes

    def shutdown(self):
        self.shutting_down = True


def schedule(collection, workers=2):
    """The units each fake worker gets first, as the scheduler hands them out."""
    options = SimpleNamespace(loadscopereorder=True)
    config = SimpleNamespace(option=options, getvalue=lambda name: {
        "tx": [f"{workers}*popen"], "dist": "loadfile"}.get(name))
    scheduler = conftest._LoadFileLearnerRunsApart(config)
    nodes = [FakeWorker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return [[collection[i] for i in node.sent] for node in nodes]


def test_the_longest_units_start_first_though_they_hold_fewest_tests():
    many = [f"tests/lessons/test_many.py::test_{i}" for i in range(20)]
    learner = "tests/notebooks/test_learner_run.py::test_runs_to_the_end_unsolved[{}]"
    runs = [learner.format(name) for name in ("00_welcome.ipynb", "11_your_own_job.ipynb")]
    make_check = ["tests/harness/test_make_check.py::test_a", "tests/harness/test_make_check.py::test_b"]
    browser = [f"tests/browser/{name}::test_x" for name in ("test_fresh_kernel.py",
                                                           "test_jupyterlab.py")]
    assert [runs[1], make_check[0].split("::")[0]] == list(conftest.LONGEST_FIRST[-2:])
    first = [sent[0] for sent in schedule([*many, *runs, *make_check])]
    assert first == [runs[1], make_check[0]], "notebook 11's learner run, then make check"
    first = [sent[0] for sent in schedule([*many, *runs, *make_check, *browser])]
    assert first == [browser[1], runs[1]], \
        "make test-all: the browser's Run All of every notebook first, then notebook 11's"


def test_each_learner_run_is_a_unit_of_its_own():
    learner = "tests/notebooks/test_learner_run.py::test_runs_to_the_end_unsolved[{:02d}.ipynb]"
    sent = schedule([learner.format(n) for n in range(4)])
    assert sorted(map(len, sent)) == [2, 2], "two workers share four learner runs"


def test_the_catalogue_is_shared_by_the_workers():
    catalogue = [f"tests/harness/test_graders.py::test_a_wrong_body_fails_saying_why[{n}]"
                 for n in range(6)]
    sent = schedule([*catalogue, "tests/lessons/test_many.py::test_0"], workers=3)
    assert all(any(t in catalogue for t in s) for s in sent), sent
