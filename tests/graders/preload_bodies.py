"""Imported by the test suite's fork server (tests/conftest.py, when the graders grade
solutions/): every module of the graders' catalogue of bodies, imported once before the
ranks fork instead of by each rank of each launch (copies.py alone compiles every reference
solution again: a fifth of a catalogue rank's time). Never for `make check`: a body imports
labs/, your files, which the fork server must not hold."""
import contextlib
import importlib
import pkgutil

from tests.graders import bodies

for module in pkgutil.walk_packages(bodies.__path__, bodies.__name__ + "."):
    # A body that does not import is its test's to report, not the fork server's: an
    # exception here would stop the fork server, and with it every launch.
    with contextlib.suppress(Exception):
        importlib.import_module(module.name)
