"""A buffer is a byte range: the doctor on views (rows, strided views, a whole-tensor write),
a storage freed under a send in flight, a non-contiguous send/recv, and received buffers
used on a CUDA stream the wait did not order. Each hazard is named at its line; each fixed
twin gets a clean bill (exit 0). Real torchrun jobs, like the rest of tests/doctor/."""
from __future__ import annotations

import pytest
import torch

from labs.harness.grading.buffers import overlap, readable, same_bytes
from tests.doctor.sweeps import over_sizes
from tests.doctor.test_doctor import at, doctor, finding

slow = pytest.mark.slow


def test_byte_ranges_are_exact_for_views():
    """Rows side by side, interleaved columns and a strided view around a row share no
    byte; a column and a row do, and so does the whole tensor with any of its views."""
    grid = torch.zeros(4, 6)
    assert not overlap(grid[0], grid[1])
    assert not overlap(grid[:, 0::2], grid[:, 1::2])
    assert not overlap(grid[::2], grid[1])
    assert not overlap(grid[:, 1], grid[2, 2:])
    assert overlap(grid[:, 1], grid[2]) and overlap(grid, grid[:, 1::2])
    assert overlap(grid.view(torch.uint8)[:, 1::8], grid[:, 0::2])     # a byte of an element
    assert not overlap(grid, torch.zeros(4, 6))


def test_a_freed_storage_is_never_read():
    sent = torch.ones(8)
    before = sent.clone()
    sent.untyped_storage().resize_(0)
    assert not readable(sent) and not same_bytes(sent, before)
    assert not overlap(sent, before)


@slow
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_a_ring_all_gather_into_rows_of_one_tensor_is_clean(nproc):
    report = doctor("views_ring_rows.py", nproc)
    assert report.status == 0 and not report.findings, report.text()


@slow
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_reading_the_row_being_received_is_named_at_its_line(nproc):
    report = doctor("views_ring_rows_race.py", nproc)
    finding(report, "buffer_in_flight", set(range(nproc)), at("views_ring_rows_race.py", "HAZARD"))
    assert report.status == 1 and len(report.findings) == 1, report.text()


@slow
def test_strided_views_count_only_the_bytes_they_touch():
    assert doctor("views_strided.py", 3).status == 0
    report = doctor("views_strided_race.py", 3)
    finding(report, "buffer_in_flight", {0, 1, 2}, at("views_strided_race.py", "HAZARD: column"))
    finding(report, "buffer_in_flight", {0, 1, 2}, at("views_strided_race.py", "HAZARD: writes"))
    assert len(report.findings) == 2, report.text()


@pytest.mark.rule("buffer_freed", "both")
@slow
def test_a_send_buffer_freed_in_flight_is_named_and_does_not_crash_the_script():
    report = doctor("freed_send.py", 2)
    f = finding(report, "buffer_freed", {0}, at("freed_send.py", "resize_(0)"))
    assert report.status == 1 and report.outcome.returncode == 0, report.text()
    assert "undefined" in f.nccl and f.source
    assert doctor("freed_send_ok.py", 2).status == 0


@pytest.mark.rule("not_contiguous", "both")
@slow
def test_a_non_contiguous_receive_is_one_problem_at_its_line():
    report = doctor("noncontiguous_recv.py", 2)
    f = finding(report, "not_contiguous", {0, 1}, at("noncontiguous_recv.py", "HAZARD"))
    assert "gloo refuses non-contiguous tensors" in f.gloo
    assert "warns once" in f.nccl and "check_gpu_single_tensor" in f.source
    assert [g.kind for g in report.findings] == ["not_contiguous"], report.text()
    assert doctor("noncontiguous_recv_ok.py", 2).status == 0


@slow
@pytest.mark.parametrize("script", [
    pytest.param("streams_side_read.py", marks=pytest.mark.rule("stream_race", "hazard")),
    "streams_wait_on_side.py"])
def test_a_received_buffer_used_on_a_stream_the_wait_did_not_order_is_named(script):
    report = doctor(f"gpu/{script}", 3)
    f = finding(report, "stream_race", {0, 1, 2}, at(f"gpu/{script}", "HAZARD"))
    assert f.nccl_only and "Work.wait" in f.source and report.status == 1, report.text()
    assert len(report.findings) == 1, report.text()


@slow
@pytest.mark.parametrize("script", [
    pytest.param("streams_side_read_ok.py", marks=pytest.mark.rule("stream_race", "fixed")),
    "streams_wait_on_side_ok.py"])
def test_its_fixed_twins_are_clean(script):
    report = doctor(f"gpu/{script}", 3)
    assert report.status == 0 and not report.findings, report.text()
    if script == "streams_wait_on_side_ok.py":     # sent on a side stream: what is not checked
        note = next(n for n in report.notes if n.startswith("not modelled: CUDA streams"))
        assert "uses after its wait are checked" in note and "not checked: whether" in note
