"""README, Makefile, requirements.txt, requirements.lock, environment.yml, .ci/run and the
notebooks agree."""
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests import course

try:
    import tomllib
except ImportError:        # Python 3.10: the lock brings tomli there
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
# torch's lines, in requirements.txt and in the lock: the CPU build where PyPI's wheel is CUDA's.
TORCH_PINS = ["torch==2.13.0+cpu; sys_platform == \"linux\"",
              "torch==2.13.0; sys_platform != \"linux\""]


def requirement_names(text):
    """{name: [line, ...]}: a name has several lines when markers split it (torch)."""
    names = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()
            names.setdefault(name, []).append(line)
    return names


def locked():
    """requirements.lock as {name: [Requirement, ...]}: one line per marker fork."""
    lines = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            lines.setdefault(canonicalize_name(req.name), []).append(req)
    return lines


def make_var(name):
    """A Makefile variable's default value, continuation lines joined and $(VAR)s expanded."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    value = re.search(rf"^{name}\s*[:?]?=\s*(.+)$", text, re.M)[1]
    value = re.sub(r"\$\((\w+)\)", lambda m: make_var(m[1]), value)
    return " ".join(value.split())


def pinned_version(req):
    (spec,) = req.specifier
    assert spec.operator == "==", f"{req} is not an exact pin"
    return Version(spec.version)


def test_requirements_pin_torch_and_list_the_stack():
    reqs = requirement_names((ROOT / "requirements.txt").read_text())
    assert [str(Requirement(r)) for r in reqs["torch"]] == TORCH_PINS, \
        "torch must stay pinned, its CPU build on Linux (PyPI's Linux wheel is the CUDA build)"
    for name in ("jupyterlab", "nbval", "ipywidgets", "matplotlib", "pytest", "pytest-timeout",
                 "tqdm", "ipykernel", "playwright"):
        assert name in reqs, f"{name} missing from requirements.txt"


def test_lock_pins_every_requirement_at_a_version_that_satisfies_it():
    lock = locked()
    lines = requirement_names((ROOT / "requirements.txt").read_text()).values()
    for line in [line for forks in lines for line in forks]:
        req = Requirement(line)
        forks = lock.get(canonicalize_name(req.name))
        assert forks, f"{req.name} is in requirements.txt but not in the lock: run `make lock`"
        if req.marker is not None:      # a line for some systems: the lock's line for them
            forks = [pin for pin in forks if pin.marker == req.marker]
            assert forks, f"no line for {req} in the lock: run `make lock`"
        for pin in forks:
            assert req.specifier.contains(pinned_version(pin), prereleases=True), \
                f"lock has {pin}, requirements.txt asks {req}: run `make lock`"
    assert all(pinned_version(r) for forks in lock.values() for r in forks)


def test_lock_has_the_cpu_torch_and_nothing_cuda():
    lock = locked()
    assert sorted(str(r) for r in lock["torch"]) == TORCH_PINS
    cuda = [n for n in lock if n.startswith(("nvidia-", "cuda-")) or n == "triton"]
    assert not cuda, f"CUDA packages in the lock: {cuda} (torch's CPU build needs none)"
    # The header names the command that made it, the Makefile's own.
    command = make_var("LOCK_CMD")
    assert f"--find-links {CPU_TORCH_INDEX}/torch/" in command, "uv must see the +cpu wheels"
    header = LOCK.read_text().split("\n\n", 1)[0]
    assert "make lock" in header and f"#   {command}\n" in header


def test_lock_resolves_torch_with_the_installed_cpu_wheels_metadata():
    """uv takes torch's dependencies from pyproject.toml; they must be the CPU wheel's own."""
    metas = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["dependency-metadata"]
    pins = sorted(str(pinned_version(pin)) for pin in locked()["torch"])
    assert sorted((m["name"], m["version"]) for m in metas) == [("torch", v) for v in pins]
    assert metas[0]["requires-dist"] == metas[1]["requires-dist"], "one build, one dependency list"
    installed = importlib.metadata.version("torch")
    if not installed.endswith("+cpu"):
        pytest.skip(f"torch {installed} is not the CPU build whose metadata the lock used")
    assert metas[0]["requires-dist"] == importlib.metadata.requires("torch")


def test_this_environment_has_the_locked_versions():
    """`make` installed the lock into the running environment, so every pin that applies here holds."""
    wrong = []
    for name, forks in locked().items():
        for pin in forks:
            if pin.marker is None or pin.marker.evaluate():
                have = Version(importlib.metadata.version(name))
                if not pin.specifier.contains(have, prereleases=True):
                    wrong.append(f"{name} {have} (lock: {pin.specifier})")
    assert not wrong, f"not the lock's versions (re-run make): {wrong}"


def test_environment_yml_installs_the_lock():
    env = (ROOT / "environment.yml").read_text()
    pip_part = env.split("- pip:", 1)[1]
    entries = [line.strip()[2:].strip() for line in pip_part.splitlines()
               if line.strip().startswith("- ")]
    assert entries == [f"--extra-index-url {CPU_TORCH_INDEX}", "-r requirements.lock", "-e ."], \
        entries
    conda_deps = env.split("dependencies:", 1)[1].split("- pip:", 1)[0]
    assert "torch" not in conda_deps and "pytorch" not in conda_deps, \
        "torch comes from the lock only (one pinned list)"
    py = re.search(r"python=(\d+)\.(\d+)", env)
    assert py and (int(py[1]), int(py[2])) >= (3, 10)
    assert "conda-forge" in env


def test_makefile_installs_the_lock_and_has_the_commands():
    mk = (ROOT / "Makefile").read_text()
    assert "LOCK   := requirements.lock" in mk
    assert "$(STAMP): $(LOCK) pyproject.toml" in mk, "re-install when the lock changes"
    setup = mk.split("\n$(STAMP):", 1)[1].split("\n\n")[0]
    assert "pip install --quiet --no-deps -r $(LOCK)" in setup
    assert "requirements.txt" not in setup, "make installs the lock, never requirements.txt"
    assert "uv pip compile requirements.txt --universal" in mk
    for target in ("lab:", "test:", "check:", "lock:"):
        assert re.search(rf"^{target}", mk, re.M), f"Makefile lacks {target}"
    assert "--impl=labs" in mk.split("\ncheck:", 1)[1].split("\n\n")[0]
    assert "--LabApp.default_url=/lab/tree/$(FIRST_LESSON)" in mk.split("\nlab:", 1)[1].split("\n\n")[0]
    assert re.search(r"^FIRST_LESSON := notebooks/yours/00_welcome.ipynb$", mk, re.M)


def test_ci_runs_make_test_all_and_nothing_else():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme and "make check" in readme
    assert "make test-all" in readme and "`.ci/run` calls `make test-all`" in readme
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and line.strip() not in ("set -e",)
          and not line.startswith("cd ")]
    assert ci == ["exec make test-all"], ci


def recipe(target):
    """A Makefile target's recipe lines, continuation lines joined."""
    mk = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    return mk.split(f"\n{target}:", 1)[1].split("\n\n")[0]


def test_the_two_lanes_run_one_pytest_and_differ_by_the_lane_only():
    """make test = --lane=test, make test-all = --lane=all: the same pytest otherwise (the
    tests either leaves out are marked all_lane, pytest.ini registers the mark)."""
    test, test_all = recipe("test"), recipe("test-all")
    assert "--lane=test" in test and "--lane=all" in test_all
    assert test.replace("--lane=test", "--lane=all").replace("test:", "test-all:", 1) == test_all
    assert "--lane=test" in recipe("test-fast")
    assert re.search(r"^\s+all_lane: ", (ROOT / "pytest.ini").read_text(), re.M)


def _make_jobs(**popen) -> int:
    """The JOBS make test runs pytest's workers with, as make computes it here."""
    run = subprocess.run(["make", "-s", "--no-print-directory", "--eval=jobs: ; @echo $(JOBS)",
                          "jobs"], cwd=ROOT, capture_output=True, text=True, timeout=60, **popen)
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux's CPU affinity")
def test_make_test_runs_one_worker_per_core_and_two_at_least():
    """More cores, more xdist workers, one more than cores (the lanes wait more than they
    compute); never one."""
    cores = len(os.sched_getaffinity(0))
    assert _make_jobs() == cores + 1
    one_core = min(os.sched_getaffinity(0))
    assert _make_jobs(preexec_fn=lambda: os.sched_setaffinity(0, {one_core})) == 2
    for target in ("test", "test-all", "test-fast"):
        assert "-n $(JOBS)" in recipe(target), target
    assert "JOBS=" in (ROOT / "README.md").read_text(), "the README says how to choose"


def test_make_installs_torch_alone_from_pypi_plus_the_cpu_index_first():
    assert make_var("TORCH_INDEX") == CPU_TORCH_INDEX
    setup = recipe("$(STAMP)").splitlines()
    torch_step = [i for i, line in enumerate(setup) if "torch-install" in line]
    lock_step = [i for i, line in enumerate(setup) if "-r $(LOCK)" in line]
    assert torch_step and lock_step and torch_step[0] < lock_step[0], "torch first, then the lock"
    install = recipe("torch-install")
    assert "--extra-index-url $(TORCH_INDEX)" in install and "--no-deps" in install
    assert "--only-binary=:all:" in install, "a wheel or nothing: never a build from source"
    assert "$(TORCH_NOT_FOUND)" in install
    # the lock's torch lines are what it installs (grep), and nothing else of the lock
    lines = re.search(r"grep -E '([^']+)' \$\(LOCK\)", install)[1]
    chosen = [line for line in LOCK.read_text().splitlines() if re.match(lines, line)]
    assert sorted(str(Requirement(line)) for line in chosen) == TORCH_PINS, chosen


def test_nbval_is_strict_everywhere():
    lax = "--nbval" + "-lax"   # spelled in two parts so this file does not contain it
    files = [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts
             and ".git" not in p.parts and p.suffix in ("", ".py", ".ini", ".md", ".ipynb",
                                                          ".cfg", ".toml", ".yml", ".sh")]
    offenders = [str(p.relative_to(ROOT)) for p in files
                 if lax in p.read_text(errors="ignore")]
    assert not offenders, f"{lax} appears in {offenders}"
    ini = (ROOT / "pytest.ini").read_text()
    assert "testpaths = tests notebooks" in ini
    assert re.search(r"addopts = .*--nbval\b", ini), "plain `pytest` must run the notebooks"


def lesson_rows():
    readme = (ROOT / "README.md").read_text()
    return re.findall(r"^\| (\d\d) \| `(\w+)` \| `(\w+)` \|", readme, re.M)


def test_readme_lesson_map_matches_the_files():
    present = [(lesson.number, lesson.notebook.stem, lesson.module) for lesson in course.lessons()]
    assert lesson_rows() == present, f"README table {lesson_rows()} vs notebooks present {present}"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_committed_with_outputs_and_no_errors(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, "a notebook without code cells"
    for cell in code:
        source = "".join(cell["source"])
        assert cell["execution_count"] is not None, f"cell not executed: {source[:60]!r}"
        if "NBVAL_RAISES_EXCEPTION" not in source:
            errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
            assert not errors, f"error output in {source[:60]!r}"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "not run top to bottom in one go"


def test_readme_tells_how_to_change_a_dependency_and_get_cpu_torch():
    readme = (ROOT / "README.md").read_text()
    assert "requirements.lock" in readme and "make lock" in readme
    assert CPU_TORCH_INDEX in readme and "torch==2.13.0+cpu" in readme


def test_readme_first_screen_is_the_two_commands_and_nothing_to_do_before():
    """A new user on Linux types the two commands: nothing to set or install first."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    commands = [line.split("#")[0].strip() for line in block[1].splitlines()]
    assert commands == ["make lab", "make test"], commands
    before = readme[:block.end()]
    assert before.count("\n") < 30, "the two commands are on the first screen"
    for chore in ("PIP_EXTRA_INDEX_URL", "TORCH_INDEX", "export ", "pip install", "apt"):
        assert chore not in before, f"{chore!r} before the two commands"
    assert re.search(r"\d+ minutes", block[1]), "make test says what it costs"


def test_readme_lists_every_exercise():
    from tests.course import exercises
    readme = (ROOT / "README.md").read_text()
    missing = [f"{m}.{n}" for m, n in exercises() if f"`{n}`" not in readme]
    assert not missing, f"exercises missing from the README table: {missing}"


@pytest.mark.slow
def test_make_lab_prints_a_url_that_opens_the_learners_lesson_00(tmp_path):
    """SSH, WSL and container users have no browser opened for them: the URL JupyterLab prints
    (token included) must open their copy of lesson 00, not the Launcher at the root."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from labs.harness.commands import copies

    dry = subprocess.run(["make", "-n", "lab", "STAMP=" + sys.executable], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in dry.replace("\\\n", " ").splitlines() if "jupyter lab" in x)
    with socket.socket() as free:            # a port of its own (port=0 prints ":0")
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    args = line.split()[1:] + ["--no-browser", f"--ServerApp.port={port}",
                               "--allow-root"]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}    # no server file left behind
    lab = subprocess.Popen([str(ROOT / ".venv/bin/jupyter"), *args], cwd=ROOT, text=True, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, url, said = time.monotonic() + 120, None, []
        while url is None and time.monotonic() < deadline and lab.poll() is None:
            said.append(lab.stderr.readline())
            found = re.search(r"(http://127\.0\.0\.1:\d+/\S+)", said[-1])
            url = found and found[1]
        assert url, f"jupyter lab printed no URL (exit code {lab.poll()}):\n{''.join(said)}"
        first = sorted(copies.lessons())[0].name
        mine = (copies.YOURS / first).relative_to(ROOT).as_posix()
        assert re.fullmatch(rf"http://127\.0\.0\.1:\d+/lab/tree/{re.escape(mine)}\?token=\w+", url)
        _answers(url, line)
    finally:
        lab.terminate()
        lab.wait(30)


def _answers(url: str, line: str) -> None:
    """The URL is printed just before the server listens: wait (a minute at most) for a 200."""
    import time
    import urllib.error
    import urllib.request

    error = None
    for _ in range(120):
        try:
            with urllib.request.urlopen(url, timeout=30) as page:
                assert page.status == 200, (page.status, line)
            return
        except urllib.error.HTTPError:      # the server answered: with an error, said as is
            raise
        except OSError as exc:      # refused before it listens; a reset or a slow first
            error = exc             # answer (TimeoutError) on a loaded machine
            time.sleep(0.5)
    raise AssertionError(f"{url} never answered; last: {error!r}")
