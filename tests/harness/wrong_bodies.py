"""A known wrong body for the lesson template's grader (tests/harness/test_templates.py
grades it with impl="tests.harness.wrong_bodies"). The lessons' wrong and right bodies live
in tests/graders/bodies/, one module per lesson."""


def swap_with_partner(tensor):
    """A copy of its own tensor on every rank: no exchange at all."""
    return tensor.clone()
