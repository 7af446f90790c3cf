"""The README's map of labs/harness/ names every module of each of its packages: a file
added without its line fails here (README, "For maintainers")."""
import re

import pytest

from tests.course import ROOT

HARNESS = ROOT / "labs" / "harness"
PACKAGES = sorted(p for p in HARNESS.iterdir() if (p / "__init__.py").is_file())


def _map_section(package: str) -> str:
    """The lines of the README's map under `<package>/`, up to the next entry as deep."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("    labs/\n"):readme.index("The floors, bottom to top")]
    found = re.search(rf"\n( +){package}/.*?(?=\n\1\S|\n {{0,4}}\S|\Z)", block, re.S)
    return found[0] if found else ""


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_the_readme_maps_every_module(package):
    section = _map_section(package.name)
    assert section, f"README.md's map has no `{package.name}/` under labs/harness/"
    missing = [p.name for p in sorted(package.glob("*.py")) if p.name != "__init__.py"
               and not re.search(rf"(?<![\w.]){re.escape(p.name)}\b", section)]
    assert not missing, (f"README.md's map of labs/harness/{package.name}/ leaves out "
                         f"{missing}: add a line `<file>  <its job>` under `{package.name}/`")


def test_the_readme_says_the_graders_hang_rules_as_the_harness_has_them():
    """Troubleshooting's numbers are the constants the graders use: a constant changed
    without its sentence fails here."""
    from labs.harness.grading.run import HANG_SECONDS
    from labs.harness.launch.spec import IDLE_SECONDS, SPIN_CPU_SECONDS
    text = " ".join((ROOT / "README.md").read_text().split())
    for said in (f"nothing moving for {HANG_SECONDS:g} s is a deadlock",
                 f"asleep for {IDLE_SECONDS:g} s", f"computing {SPIN_CPU_SECONDS:g} CPU-seconds"):
        assert said in text, f"README.md's Troubleshooting should say '{said}'"
