"""notebooks/RULES.md, written from the lessons' rules cards: one page, never typed twice.

Each lesson ends with a rules card, a markdown cell headed "## Rules card" whose table has one
line per rule. Its "shown in" column cites the sections that show the rule as links to their
headings, `[§2](#2.-Which-Work-guards-which-buffer)`: JupyterLab's anchor for a heading is
its text with spaces as dashes, so a citation survives cells added or moved (a number would
not), and `tests/harness/test_rules.py` fails when one points at no heading. This command
writes the cards, in lesson order, to notebooks/RULES.md, each link made to point into its
notebook; the same test fails when RULES.md is not what it writes.

    python -m labs.harness.commands.rules            # write notebooks/RULES.md
    python -m labs.harness.commands.rules --check    # exit 1 if it is out of date
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from labs.harness import COURSE_ROOT

NOTEBOOKS = COURSE_ROOT / "notebooks"
RULES_MD = NOTEBOOKS / "RULES.md"
CARD_HEADING = "## Rules card"
CITATION = re.compile(r"\]\(#((?:[^()\s]|\([^()\s]*\))+)\)")   # balanced (...) inside
HEADER = """# The rules of point-to-point in PyTorch

The rules cards of every lesson on one page (written from the cards by
`python -m labs.harness.commands.rules`: edit a lesson's card, then run it). Each rule points to
the lesson and section whose cells show it and, where it is a behaviour of `torch.distributed`,
to the claims-ledger entry that checks it on real workers (`python -m labs.claims --lesson NN`
runs a lesson's entries on your torch). Measured on torch 2.13 with gloo; NCCL rules are
labelled, sourced in the lessons, and not run here.

Notation, the same in every lesson: `p` ranks (the world size), a tensor of `n` bytes, `r` a
rank. See the glossary in the README.
"""


@dataclass(frozen=True)
class Card:
    notebook: Path
    title: str                 # "05 · Ring all-reduce", the notebook's title up to its colon
    table: tuple[str, ...]     # the card's table, one markdown line each
    anchors: frozenset         # every heading's anchor in the notebook


def heading_text(line: str) -> str:
    """A markdown heading as JupyterLab renders it: no #, no backticks or emphasis."""
    return re.sub(r"[`*]", "", line.lstrip("#").strip())


def anchor(text: str) -> str:
    """JupyterLab's id for a heading: its rendered text, spaces as dashes."""
    return text.replace(" ", "-")


def lessons() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def card_of(notebook: Path) -> Card | None:
    """The lesson's rules card, or None if it has none."""
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "markdown"]
    lines = [line for c in cells for line in "".join(c["source"]).splitlines()]
    headings = [line for line in lines if re.match(r"#{1,6} ", line)]
    for cell in cells:
        source = "".join(cell["source"])
        if CARD_HEADING in source.splitlines():
            after = source.split(CARD_HEADING, 1)[1].splitlines()
            table = tuple(line for line in after if line.startswith("|"))
            title = heading_text(headings[0]).split(":")[0] if headings else notebook.stem
            return Card(notebook, title, table, frozenset(anchor(heading_text(h)) for h in headings))
    return None


def broken_citations(card: Card) -> list[str]:
    """The anchors a card cites that no heading of its notebook has."""
    return [a for line in card.table for a in CITATION.findall(line) if a not in card.anchors]


def rules_md() -> str:
    """notebooks/RULES.md as the cards make it."""
    parts = [HEADER]
    for notebook in lessons():
        card = card_of(notebook)
        if card is None:
            continue
        number = notebook.name[:2]
        table = [CITATION.sub(lambda m: f"]({notebook.name}#{m[1]})", line.replace("[§", f"[{number} §"))
                 for line in card.table]
        parts.append(f"## {card.title}\n\n" + "\n".join(table) + "\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if RULES.md is out of date")
    args = parser.parse_args(argv)
    text = rules_md()
    if args.check:
        fresh = RULES_MD.exists() and RULES_MD.read_text() == text
        print("notebooks/RULES.md is up to date" if fresh else
              "notebooks/RULES.md is out of date: python -m labs.harness.commands.rules")
        return 0 if fresh else 1
    RULES_MD.write_text(text)
    print(f"wrote {RULES_MD.relative_to(COURSE_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
