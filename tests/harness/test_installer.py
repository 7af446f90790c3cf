"""`make` installs torch's CPU build on Linux with nothing set (issue: a stock Linux laptop).

PyPI's Linux wheel of torch is the CUDA build, which requires nvidia-* wheels that the lock
leaves out. These tests run the Makefile's own `torch-install` step (the one `make setup`
runs first) against stand-in indexes built here (tests/harness/standin_index.py): "PyPI" has
a CUDA-shaped torch 2.13.0 requiring nvidia-cublas-cu12, and "PyTorch's CPU index" has torch
2.13.0+cpu. pip is cut off from this machine's configuration (PIP_CONFIG_FILE=/dev/null: no
local wheel folders or mirrors) and from the network (file:// indexes only), into a fresh venv.
"""
import os
import shutil
import subprocess
import sys

import pytest

from tests.course import ROOT
from tests.harness.standin_index import simple_index, wheel

# slow: a venv (pip included) and pip runs, seconds on a loaded machine: make test, not test-fast
pytestmark = [pytest.mark.skipif(not shutil.which("make"), reason="needs make"), pytest.mark.slow]


@pytest.fixture
def indexes(tmp_path):
    """(PyPI stand-in, CPU-index stand-in, an index that does not serve torch): file:// URLs."""
    built = tmp_path / "wheels"
    built.mkdir()
    cuda = wheel(built, "torch", "2.13.0", ("nvidia-cublas-cu12==12.9.1.4",))
    pypi = simple_index(tmp_path / "pypi", [cuda, wheel(built, "nvidia-cublas-cu12", "12.9.1.4")])
    cpu = simple_index(tmp_path / "cpu", [wheel(built, "torch", "2.13.0+cpu")])
    elsewhere = simple_index(tmp_path / "elsewhere", [wheel(built, "six", "1.17.0")])
    return pypi, cpu, elsewhere


@pytest.fixture(scope="module")
def empty_venv(tmp_path_factory):
    """A venv with pip only, made once: each test installs into a copy of it (seconds saved)."""
    venv = tmp_path_factory.mktemp("template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    return venv


def make_torch_install(tmp_path, pypi, torch_index, template, **pip_env):
    """`make torch-install` into a fresh venv, pip seeing only the indexes given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "MAKE"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_CACHE_DIR="1", PIP_RETRIES="0", **pip_env)
    venv = tmp_path / "venv"
    shutil.copytree(template, venv, symlinks=True)    # make would make the same (python -m venv)
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "torch-install",
                           f"VENV={venv}", f"PYTHON={sys.executable}", f"TORCH_INDEX={torch_index}"],
                          env=env, capture_output=True, text=True, timeout=300)
    return proc, venv


def installed(venv):
    """{name: version} of what pip installed in the venv (pip itself aside)."""
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze",
                          "--disable-pip-version-check"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    pairs = (line.split("==", 1) for line in out.split())
    return {name.lower(): version for name, version in pairs if name.lower() != "pip"}


@pytest.mark.parametrize("way", ["TORCH_INDEX", "PIP_EXTRA_INDEX_URL"])
def test_make_installs_the_cpu_build_from_pypi_plus_the_cpu_index(tmp_path, indexes, way,
                                                                  empty_venv):
    """The CPU index as make's TORCH_INDEX (its default is PyTorch's), or as a mirror of it
    that the user's pip is set to (PIP_EXTRA_INDEX_URL, the override), the other index
    serving no torch."""
    pypi, cpu, elsewhere = indexes
    if way == "TORCH_INDEX":
        proc, venv = make_torch_install(tmp_path, pypi, cpu, empty_venv)
    else:
        proc, venv = make_torch_install(tmp_path, pypi, elsewhere, empty_venv,
                                        PIP_EXTRA_INDEX_URL=cpu)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    have = installed(venv)
    assert have.get("torch") == "2.13.0+cpu", f"{have} (make said: {proc.stdout}{proc.stderr})"
    assert not [name for name in have if name.startswith("nvidia")], have
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout      # what `make setup` runs after the lock


def test_without_the_cpu_index_make_stops_in_one_sentence_and_installs_nothing(tmp_path, indexes,
                                                                                empty_venv):
    pypi, _, elsewhere = indexes
    proc, venv = make_torch_install(tmp_path, pypi, elsewhere, empty_venv)
    assert proc.returncode != 0
    said = [line for line in proc.stdout.splitlines() if line.startswith("make: ")]
    assert len(said) == 1, proc.stdout + proc.stderr
    sentence = said[0]
    assert sentence.count(". ") == 0 and sentence.endswith("."), sentence
    for words in ("torch==2.13.0+cpu", elsewhere, "TORCH_INDEX", "PIP_EXTRA_INDEX_URL",
                  "run make again", "CUDA"):
        assert words in sentence, f"{words!r} missing from: {sentence}"
    have = installed(venv)
    assert "torch" not in have and not [n for n in have if n.startswith("nvidia")], have
    # Nothing was downloaded: pip stopped at the resolution, naming what it saw.
    assert "from versions: 2.13.0)" in proc.stderr, proc.stderr


def test_the_standin_pypi_reproduces_the_laptop_bug(tmp_path, indexes):
    """What make did before: the lock's torch line from PyPI alone is the CUDA-shaped wheel,
    whose nvidia-* requirement `pip check` reports (so the stand-in is faithful)."""
    pypi, _, _ = indexes
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi, PIP_DISABLE_PIP_VERSION_CHECK="1")
    target = tmp_path / "old"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d",
                    str(target), "torch==2.13.0"], env=env, check=True, timeout=120)
    (got,) = [p.name for p in target.iterdir()]
    assert got == "torch-2.13.0-py3-none-any.whl", got
