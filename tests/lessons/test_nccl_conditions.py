"""NCCL's lazy-communicator rules hold only without `device_id` in init_process_group (with it
"the communicator is immediately formed", init_process_group's docstring): wherever the course
states one (a lesson's prose or card, RULES.md, the README, an NCCL claim), the same paragraph,
list item or table row names that condition."""
import json
import re
from pathlib import Path

from labs.claims import CLAIMS

ROOT = Path(__file__).resolve().parents[2]
# The rules: the first batch on a group creates its communicator; a plain send/recv creates
# its pair's 2-rank communicator, lazily, at the pair's first call.
RULE = re.compile(r"first (collective )?call on (a|its|the) group|group's first (collective )?call"
                  r"|first batch on a group|2-rank (NCCL )?communicator|lazily", re.I)


def _chunks(text: str) -> list[str]:
    """Paragraphs, list items and table rows, each as one string."""
    out, current = [], []
    for line in text.splitlines():
        if not line.strip() or re.match(r"\s*(- |\| |\d+\. )", line):
            if current:
                out.append(" ".join(current))
            current = [line] if line.strip() else []
        else:
            current.append(line)
    return out + ([" ".join(current)] if current else [])


def _texts():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                yield path.name, "".join(cell["source"])
    yield "RULES.md", (ROOT / "notebooks" / "RULES.md").read_text()
    yield "README.md", (ROOT / "README.md").read_text()
    for claim in CLAIMS.values():
        if claim.sourced:
            yield f"claim {claim.id}", claim.text


def test_every_statement_of_a_lazy_communicator_rule_names_device_id():
    stated = [(name, chunk) for name, text in _texts() for chunk in _chunks(text)
              if RULE.search(chunk)]
    assert len(stated) >= 8, stated            # the rule is still stated where it is taught
    missing = [f"{name}: {chunk[:160]}" for name, chunk in stated if "device_id" not in chunk]
    assert not missing, "stated without its device_id condition:\n" + "\n".join(missing)


def test_the_check_finds_a_rule_without_its_condition():
    bare = "On NCCL a batch that is the group's first call must include every rank."
    assert RULE.search(bare) and "device_id" not in bare
    assert _chunks("a\nb\n\n- c\n  d\n| e |") == ["a b", "- c   d", "| e |"]
