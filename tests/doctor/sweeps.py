"""The doctor's world-size sweeps, split between the lanes like the graders' world sizes:
`make test` runs a sweep only where it is a rule's test (a `rule` mark, conftest.py), at one
size (3 ranks: a ring with distinct neighbours, a pair's bug that 2 ranks cannot show);
`make test-all` runs every size (the other sizes are marked all_lane, pytest.ini)."""
import pytest

ParameterSet = type(pytest.param())          # what pytest.param returns

IN_MAKE_TEST = 3


def over_sizes(*cases):
    """pytest parameters for `cases` (an nproc, a tuple ending with one, or a pytest.param of
    such a tuple, whose marks are kept): the cases at another size than IN_MAKE_TEST are
    marked all_lane."""
    params = []
    for case in cases:
        marks = case.marks if isinstance(case, ParameterSet) else ()
        values = case.values if isinstance(case, ParameterSet) else \
            case if isinstance(case, tuple) else (case,)
        assert isinstance(values[-1], int), f"{case}: the world size comes last"
        if values[-1] != IN_MAKE_TEST:
            marks = (*marks, pytest.mark.all_lane)
        params.append(pytest.param(*values, marks=marks))
    return params
