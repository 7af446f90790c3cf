"""The doctor's world-size sweeps, split between the lanes like the graders' world sizes:
`make test` runs each sweep at one size (3 ranks: a ring with distinct neighbours, a pair's
bug that 2 ranks cannot show), `make test-all` at every size (the other sizes are marked
all_lane, pytest.ini)."""
import pytest

IN_MAKE_TEST = 3


def over_sizes(*cases):
    """pytest parameters for `cases` (an nproc, or a tuple ending with one): the cases at
    another size than IN_MAKE_TEST are marked all_lane."""
    params = []
    for case in cases:
        values = case if isinstance(case, tuple) else (case,)
        marks = () if values[-1] == IN_MAKE_TEST else (pytest.mark.all_lane,)
        params.append(pytest.param(*values, marks=marks))
    return params
