"""The report's words (no job run): an entry merged over ranks says whose words it shows."""
from __future__ import annotations

from labs.doctor.findings import Finding
from labs.doctor.report import entry, merged


def _f(kind, title, rank, gloo):
    return Finding(kind, title, (rank,), [(rank, "x.py:3")], gloo, "the same on NCCL")


def test_a_merged_entry_is_phrased_per_rank():
    out = merged([_f("unwaited", "a request never waited", 0, "rank 0's isend to rank 1"),
                  _f("unwaited", "a request never waited", 1, "rank 1's isend to rank 0"),
                  _f("buffer_in_flight", "the isend to rank 1", 0, "written"),
                  _f("buffer_in_flight", "the isend to rank 0", 1, "written"),
                  _f("self", "a send to itself", 0, "raised"),
                  _f("self", "a send to itself", 1, "raised")])
    assert [f.ranks for f in out] == [(0, 1)] * 3
    waited, flight, alone = out
    assert waited.gloo == "rank 0's isend to rank 1; likewise on rank 1 with its own peers"
    assert flight.title == "rank 0: the isend to rank 1; likewise on rank 1 with its own peers"
    assert alone.title == "a send to itself" and alone.gloo == "raised"     # the same words
    assert "ranks 0, 1 at x.py:3" in "\n".join(entry(flight))
