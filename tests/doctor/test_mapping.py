"""A GPU script under the doctor is told what a GPU run would tell it, so it takes its GPU
path (labs/doctor/gpu_view.py): tensors it put on CUDA say so (is_cuda, is_cpu, device,
get_device()), dist.get_backend() answers the backend it asked for, a CUDA default device
works, autocast("cuda") runs with its dtype. The report's header names each answer that
differs from the CPU's, once. Real torchrun jobs (labs/scripts/doctor/gpu/), both ways.
"""
from __future__ import annotations

import pytest

from labs.doctor import CLEAN, gpu_view
from tests.doctor.sweeps import over_sizes
from tests.doctor.test_doctor import at, doctor, finding

pytestmark = pytest.mark.slow
PATHS, DEFAULT = "gpu/paths_backend.py", "gpu/default_device_autocast.py"
DIFFERS = "  differs from a GPU run: "


def header(report) -> list[str]:
    return [n for n in report.notes if n.startswith(DIFFERS)]


def printed(report) -> list[str]:
    return [out.stdout for _, out in sorted(report.outputs.items())]


@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_a_script_that_asks_where_it_runs_takes_its_gpu_path(nproc):
    report = doctor(PATHS, nproc)
    assert report.findings == [] and report.status == 0, report.text()
    assert CLEAN in report.text()
    assert all("took the GPU path" in out for out in printed(report)), printed(report)
    assert header(report) == [DIFFERS + gpu_view.NCCL_AVAILABLE,
                              DIFFERS + gpu_view.BACKEND.format(asked="nccl"),
                              DIFFERS + gpu_view.TOLD_DEVICE], report.text()


def test_the_gpu_paths_own_bug_is_found():
    """Only the GPU path unpacks the batch's Works: found because that path ran."""
    report = doctor(PATHS, 3, "--bug")
    finding(report, "one_work_per_batch", {0, 1, 2}, at(PATHS, "send, recv = dist.batch"))
    assert all("took the GPU path" in out for out in printed(report))
    assert report.status == 1


@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_a_cuda_default_device_and_autocast_run_as_on_gpus(nproc):
    report = doctor(DEFAULT, nproc)
    assert report.findings == [] and report.status == 0, report.text()
    out = printed(report)
    assert all("default device cuda:" in o and "tensors on cuda:" in o
               and "autocast made torch.float16" in o and "grad scaler on: True" in o
               for o in out), out
    names = "\n".join(header(report))
    assert gpu_view.DEFAULT in names and gpu_view.TOLD_DEVICE in names
    assert gpu_view.AUTOCAST.format(dtype="torch.float16") in names, report.text()
    assert gpu_view.SCALER in names
    assert len(header(report)) == len(set(header(report))) == 4


def test_a_dtype_bug_that_only_autocast_makes_is_found():
    """float16 sent into a float32 buffer: on a CPU with autocast off both are float32."""
    report = doctor(DEFAULT, 3, "--bug")
    f = finding(report, "size_mismatch", {0, 1, 2}, at(DEFAULT, "works = dist.batch"))
    assert "float16" in f.gloo and "float32" in f.gloo and report.status == 1


def test_a_cpu_script_is_told_nothing_different():
    report = doctor("helper_attend.py", 3)
    assert header(report) == [] and "mapped" not in report.text(), report.text()
