"""The doctor's NCCL model where porting to GPUs hurts, on real torchrun jobs: each hazard
script (labs/scripts/doctor/nccl/) is predicted at its line with the source of the rule, and
its fixed twin gets a clean bill (exit 0). One doctor run per script, shared.
"""
from __future__ import annotations

import pytest

from tests.doctor.jobs import CLEAN, NCCL, ROOT, at, doctor, only
from tests.doctor.sweeps import over_sizes

pytestmark = pytest.mark.slow


# hazard, ranks, kind, the line it names, words of its NCCL text, words of its source
HAZARDS = [
    pytest.param("works_unpacked.py", 2, "one_work_per_batch", "(send_req, recv_req) = exchange()",
                 "unpacking it into 2 names raises ValueError",
                 "distributed_c10d.py batch_isend_irecv",
                 marks=pytest.mark.rule("one_work_per_batch", "hazard")),
    ("works_unpacked.py", 2, "one_work_per_batch", "works[1].wait()",
     "works[1] raises IndexError", "_coalescing_manager"),
    ("works_unpacked.py", 2, "one_work_per_batch", "zip(ops, works)",
     "zip() stops after its one Work", "cm.works"),
    ("works_unpacked.py", 2, "one_work_per_batch", "len(works) == len(ops)",
     "len() of the list is 1 there", "cm.works"),
    ("works_unpacked.py", 4, "one_work_per_batch", "(send_req, recv_req) = exchange()",
     "unpacking it into 2 names raises ValueError", "distributed_c10d.py batch_isend_irecv"),
    pytest.param("ring_isend_first.py", 3, "lazy_communicators", "req = dist.isend(mine, right)",
                 "a hang at any message size", "ProcessGroupNCCL.cpp, pointToPoint",
                 marks=pytest.mark.rule("lazy_communicators", "hazard")),
    ("ring_isend_first.py", 4, "lazy_communicators", "req = dist.isend(mine, right)",
     "2-rank communicator for each pair", "getKeySendRecv"),
    pytest.param("tags_out_of_order.py", 2, "tags_ignored_on_nccl", "tag=2)",
                 "NCCL ignores tags and pairs in order", "tag",
                 marks=pytest.mark.rule("tags_ignored_on_nccl", "hazard")),
    pytest.param("eager_ring_isend_first.py", 3, "ungrouped_exchange",
                 "req = dist.isend(mine, right)", "with device_id every point-to-point op of a "
                 "rank runs on the group's one communicator", "eager_connect_single_device",
                 marks=pytest.mark.rule("ungrouped_exchange", "hazard")),
]


@pytest.mark.parametrize("script, nproc, kind, line, words, source", HAZARDS)
def test_each_nccl_hazard_is_predicted_with_its_source(script, nproc, kind, line, words, source):
    report = doctor(NCCL / script, nproc)
    where = at(NCCL / script, line)
    hits = [f for f in only(report, kind) if where in {w for _, w in f.where}]
    assert hits, f"{kind} not at {where}:\n{report.text()}"
    f = hits[0]
    assert f.nccl_only and words in f.nccl and source in f.source, report.text()
    assert report.status == 1 and f"{kind}]" in report.text()
    assert "none predicted" not in report.text()


def test_device_id_creates_no_pair_communicators():
    """With device_id the communicator is made at init: no creation cycle (the ring's risk
    is then the one stream, predicted above)."""
    report = doctor(NCCL / "eager_ring_isend_first.py", 3)
    assert "lazy_communicators" not in report.kinds(), report.text()
    assert report.kinds() == {"ungrouped_exchange"}, report.text()


def test_the_tag_hazard_is_not_a_stream_hazard():
    """NCCL pairs by order: rank 1 sends nothing, so no two ranks wait on sends."""
    report = doctor(NCCL / "tags_out_of_order.py", 2)
    assert report.kinds() == {"tags_ignored_on_nccl"}, report.text()


def test_a_ring_of_isends_at_two_ranks_meets_its_pair():
    """Two ranks' first calls share one pair's communicator: no creation cycle (the stream
    model's head-to-head warning is another rule)."""
    report = doctor(NCCL / "ring_isend_first.py", 2)
    assert "lazy_communicators" not in report.kinds(), report.text()


# every fixed twin at 2, 3 and 4 ranks: a clean bill must not depend on the world size
# (make test: at 3, tests/doctor/sweeps.py), and the rules each is make test's twin for (the
# nearest twin where a rule has none of its own: every rank's first call is its batch, tags
# that match; works_relative.py is a second example)
TWIN_OF = {"works_loop.py": ("one_work_per_batch",), "works_relative.py": (),
           "ring_batched.py": ("lazy_communicators", "nccl_first_batch"),
           "tags_in_order.py": ("tags_ignored_on_nccl", "tag_mismatch"),
           "eager_ring_batched.py": ("ungrouped_exchange",)}
FIXED = [pytest.param(script, n, marks=[pytest.mark.rule(kind, "fixed") for kind in kinds])
         for script, kinds in TWIN_OF.items() for n in (2, 3, 4)]


@pytest.mark.parametrize("script, nproc", over_sizes(*FIXED))
def test_each_fixed_twin_gets_a_clean_bill(script, nproc):
    report = doctor(NCCL / script, nproc)
    assert report.status == 0 and not report.problems, report.text()
    assert CLEAN in report.text()


def test_a_module_level_ops_list_is_a_note_not_a_problem():
    """PyTorch's docstring keeps the P2POps at module level: the group outlives
    destroy_process_group(), which this run did not see abort: said, exit 0."""
    report = doctor(NCCL / "ring_batched.py", 3)
    notes = report.by_kind("group_outlives_destroy")
    if notes:
        assert all(f.note for f in notes) and ": note [group_outlives_destroy]" in report.text()
        assert "gloo, observed" not in report.text()
    assert report.status == 0


def test_the_lesson_12_exercise_is_told_of_its_cycle():
    script = ROOT / "labs" / "scripts" / "halo_exchange.py"
    report = doctor(script, 3)
    lazy = report.by_kind("lazy_communicators")
    assert lazy and set(lazy[0].ranks) == {0, 1, 2}, report.text()
    assert at(script, "dist.isend(u[:1], left)") in {w for _, w in lazy[0].where}
    assert "a hang at any message size" in lazy[0].nccl


def test_no_process_group_is_nothing_to_check():
    report = doctor(NCCL / "no_group.py", 2)
    assert report.status == 2 and report.findings == [], report.text()
    assert report.text(timings=False).endswith("no process group was created: nothing to check")
    assert "record overhead" not in report.text()          # nothing recorded to cost
