"""README, Makefile, requirements.txt, environment.yml, .ci/run and the notebooks agree."""
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def requirement_names(text):
    names = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower()
            names[name] = line
    return names


def test_requirements_pin_torch_and_list_the_stack():
    reqs = requirement_names((ROOT / "requirements.txt").read_text())
    assert reqs["torch"] == "torch==2.13.0", "torch must stay pinned (a newer one is a CUDA download)"
    for name in ("jupyterlab", "nbval", "ipywidgets", "matplotlib", "pytest", "pytest-timeout",
                 "tqdm", "ipykernel"):
        assert name in reqs, f"{name} missing from requirements.txt"


def test_environment_yml_installs_requirements_txt():
    env = (ROOT / "environment.yml").read_text()
    pip_part = env.split("- pip:", 1)[1]
    entries = [l.strip()[2:].strip() for l in pip_part.splitlines() if l.strip().startswith("- ")]
    assert entries == ["-r requirements.txt", "-e ."], entries
    conda_deps = env.split("dependencies:", 1)[1].split("- pip:", 1)[0]
    assert "torch" not in conda_deps and "pytorch" not in conda_deps, \
        "torch comes from requirements.txt only (one pinned list)"
    py = re.search(r"python=(\d+)\.(\d+)", env)
    assert py and (int(py[1]), int(py[2])) >= (3, 10)
    assert "conda-forge" in env


def test_makefile_bootstraps_from_requirements_and_has_the_commands():
    mk = (ROOT / "Makefile").read_text()
    assert "pip install --quiet -r requirements.txt" in mk
    assert "$(STAMP): requirements.txt pyproject.toml" in mk, "re-install when requirements change"
    for target in ("lab:", "test:", "check:"):
        assert re.search(rf"^{target}", mk, re.M), f"Makefile lacks {target}"
    assert "--impl=labs" in mk.split("\ncheck:", 1)[1].split("\n\n")[0]
    assert "00_welcome.ipynb" in mk.split("\nlab:", 1)[1].split("\n\n")[0]


def test_ci_runs_the_readme_test_command_and_nothing_else():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme and "make check" in readme
    ci = [l for l in (ROOT / ".ci/run").read_text().splitlines()
          if l.strip() and not l.startswith("#") and l.strip() not in ("set -e",)
          and not l.startswith("cd ")]
    assert ci == ["exec make test"], ci


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
    rows = lesson_rows()
    assert len(rows) == 10
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for number, notebook, module in rows:
        assert notebook.startswith(number)
        if (ROOT / "notebooks" / f"{notebook}.ipynb").exists():
            assert (ROOT / "labs" / f"{module}.py").exists(), f"labs/{module}.py missing"
    assert set(notebooks) <= {nb for _, nb, _ in rows}, "a notebook missing from the README map"


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


def test_readme_lists_every_exercise():
    from tests.test_exercise_contract import ALL
    readme = (ROOT / "README.md").read_text()
    missing = [f"{m}.{n}" for m, n in ALL if f"`{n}`" not in readme]
    assert not missing, f"exercises missing from the README table: {missing}"
