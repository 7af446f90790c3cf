"""The doctor's per-communicator model on real torchrun jobs: messages match per process group
(a vLLM-style pipeline with a CPU group for metadata is clean; a tensor received on the wrong
group is named), a batch that raised still counts as the rank's first batch, an any-source
receive invents no exchange, and NCCL's order of kernels across communicators (collectives
and barriers included) is predicted both ways, with and without device_id.
"""
from __future__ import annotations

import pytest

from tests.doctor.jobs import NCCL, SCRIPTS, at, clean, doctor
from tests.doctor.sweeps import over_sizes

pytestmark = pytest.mark.slow


@pytest.mark.rule("size_mismatch", "fixed")
@pytest.mark.rule("dtype_mismatch", "fixed")
@pytest.mark.rule("group_mismatch", "fixed")
@pytest.mark.rule("communicator_order", "fixed")
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_metadata_on_a_cpu_group_and_tensors_on_the_device_group_is_clean(nproc):
    """The tensors' isends are posted before the metadata: matched per group, no size
    mismatch (and nothing said to be observed that did not happen)."""
    report = doctor(SCRIPTS / "groups_metadata_pipeline.py", nproc)
    clean(report)
    assert "size_mismatch" not in report.kinds() and "SIGABRT" not in report.text()
    assert all(f"stage {r}: hidden sum" in report.outputs[r].stdout for r in range(nproc))


@pytest.mark.rule("group_mismatch", "hazard")
def test_a_tensor_received_on_the_wrong_group_is_named():
    script = SCRIPTS / "groups_wrong_group.py"
    report = doctor(script, 2)
    [f] = report.by_kind("group_mismatch")
    assert {w for _, w in f.where} == {at(script, "works = [dist.isend(t, dst)"),
                                       at(script, "group=cpu_group) for t in out")}
    assert "on the default group" in f.gloo and "on group 1 (ranks [0, 1])" in f.gloo
    assert "deadlock" not in report.kinds() and report.status == 1, report.text()


@pytest.mark.rule("communicator_order", "hazard")
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_without_device_id_the_first_isend_waits_for_a_rank_in_a_cpu_recv(nproc):
    script = SCRIPTS / "groups_metadata_pipeline.py"
    report = doctor(script, nproc, "--lazy")
    [f] = report.by_kind("communicator_order")
    assert f.nccl_only and (0, at(script, "works = [dist.isend(t, dst)")) in f.where
    assert "on the CPU group, gloo" in f.nccl and "device_id" in f.nccl
    assert "Using multiple NCCL communicators concurrently" in f.source
    assert report.kinds() == {"communicator_order"}, report.text()


def test_a_batch_that_raised_is_still_the_ranks_first_batch():
    """Lesson 12's snippet 1: both ranks' first call is the same batch; rank 1's raised."""
    report = doctor(SCRIPTS / "snippet1.py", 2)
    assert "nccl_first_batch" not in report.kinds(), report.text()
    assert "self" in report.kinds()


def test_the_first_batch_rule_still_holds_per_group():
    report = doctor(SCRIPTS / "nccl_only.py", 3)
    [f] = report.by_kind("nccl_first_batch")
    assert set(f.ranks) == {0, 1} and "(rank 2 started with another call)" in f.gloo


@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_an_any_source_request_reply_is_only_an_any_source_problem(nproc):
    report = doctor(SCRIPTS / "groups_any_source_reply.py", nproc)
    assert report.kinds() == {"any_source"}, report.text()
    assert "every rank finished" in report.text()


# hazard, ranks, args, the line named for rank 0 and for rank 1, words of its NCCL text
ORDER = [("collective_order.py", n, args, ("return dist.batch_isend_irecv(ops)",
                                          "dist.all_reduce(loss)              # ... the others"),
          "a hang at any message size") for n in (2, 3, 4) for args in ((), ("--device-id",))]
ORDER += [("barrier_order.py", n, args, ("work = dist.isend(weights, 1)", "    dist.barrier()\n"),
           words) for n in (2, 3) for args, words in
          (((), "a hang at any message size"),
           (("--device-id",), "for messages larger than NCCL's buffers"))]


@pytest.mark.parametrize("script, args, lines, words, nproc",
                         over_sizes(*[(s, a, lines, w, n) for s, n, a, lines, w in ORDER]))
def test_calls_ordered_differently_across_communicators_are_predicted(script, args, lines, words,
                                                                      nproc):
    report = doctor(NCCL / script, nproc, *args)
    [f] = report.by_kind("communicator_order")
    assert f.nccl_only and words in f.nccl and set(f.ranks) == set(range(nproc)), report.text()
    text = (NCCL / script).read_text()
    for rank, line in enumerate(lines):
        where = f"{NCCL / script}:{text[:text.index(line)].count(chr(10)) + 1}"
        assert (rank, where) in f.where, report.text()
    assert "NVIDIA/nccl#1174" in f.source and report.status == 1
    assert "deadlock" not in report.kinds() and "every rank finished" in report.text()


FIXED = [(s, a, n) for s in ("collective_in_order.py", "barrier_in_order.py")
         for a in ((), ("--device-id",)) for n in (2, 3, 4)]


@pytest.mark.parametrize("script, args, nproc", over_sizes(*FIXED))
def test_the_same_order_on_every_rank_gets_a_clean_bill(script, args, nproc):
    clean(doctor(NCCL / script, nproc, *args))


def test_a_subgroups_collective_is_not_counted_as_the_worlds():
    """Rank 1's all_reduce on the group of ranks [0, 1] is not the world's barrier: the cycle
    is rank 1's recv and rank 2's barrier, at every size on NCCL (no send to buffer)."""
    script = SCRIPTS / "groups_subgroup_hang.py"
    report = doctor(script, 3)
    [f] = report.by_kind("deadlock")
    assert set(f.ranks) == {1, 2} and "at every size" in f.nccl, report.text()
    assert (1, at(script, "dist.recv(torch.empty(1), 2)")) in f.where
    assert (2, at(script, "dist.barrier()")) in f.where
