"""The rules cards cite headings, never cell numbers, and notebooks/RULES.md is written from
them (labs/harness/commands/rules.py): a card edited without RULES.md fails here."""
import re

import pytest

from labs.harness.commands import rules

LESSONS = rules.lessons()


@pytest.mark.parametrize("notebook", LESSONS, ids=lambda p: p.name)
def test_every_citation_points_at_a_heading(notebook):
    card = rules.card_of(notebook)
    assert card is not None, f"{notebook.name} has no '{rules.CARD_HEADING}' cell"
    rows = [line for line in card.table[2:]]
    assert rows and all(rules.CITATION.search(line) for line in rows), (
        f"{notebook.name}'s rules card: every rule cites the section that shows it as a link "
        f"to its heading, [§2](#2.-Heading-text-with-dashes)")
    assert not rules.broken_citations(card), (
        f"{notebook.name}'s rules card cites {rules.broken_citations(card)}, which no heading "
        f"of the notebook has (a heading's anchor is its text, spaces as dashes)")
    assert not any(re.search(r"\bcells? \d", line) for line in card.table), \
        f"{notebook.name}'s rules card cites a cell by number: cite its section's heading"


def test_rules_md_is_written_from_the_cards():
    assert rules.RULES_MD.read_text() == rules.rules_md(), (
        "notebooks/RULES.md is not what the cards say: run "
        "`python -m labs.harness.commands.rules` and commit it")


def test_a_broken_citation_is_found(tmp_path):
    card = rules.Card(tmp_path, "99 · X", ("| rule | shown in |", "|---|---|",
                                          "| r | [§1](#1.-Gone) |"), frozenset({"1.-Here"}))
    assert rules.broken_citations(card) == ["1.-Gone"]
