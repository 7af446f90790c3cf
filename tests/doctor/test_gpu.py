"""GPU scripts under the doctor, unmodified, on this CPU-only machine: CUDA mapped onto the
CPU and NCCL onto gloo inside the doctor's ranks only (labs/doctor/cuda.py); a call that
cannot be mapped stops the run with exit 2, naming the call and its line.

Real torchrun jobs (labs/scripts/doctor/gpu/), one doctor run per script and arguments in
the session (tests/doctor/jobs.py).
"""
from __future__ import annotations

import threading

import pytest
import torch

from labs.doctor import CLEAN, cuda
from tests.doctor.sweeps import over_sizes
from tests.doctor.test_doctor import at, doctor, finding

MAPPED = "CUDA mapped onto the CPU (streams and events recorded, not run)"
RING = "gpu/ring_attention_cuda.py"


def p2p_streams(report) -> set:
    return {c.stream for run in report.runs.values() for c in run.calls if c.p2p}


@pytest.mark.slow
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_ring_attention_written_for_gpus_is_clean(nproc):
    report = doctor(RING, nproc)
    assert report.findings == [] and report.status == 0, report.text()
    assert CLEAN in report.text()
    assert f"the script asked for nccl and CUDA: run on gloo, {MAPPED}" in report.text()
    assert all("matches full attention" in out.stdout for out in report.outputs.values())
    assert p2p_streams(report) == {"side 1"}          # K/V rotated on the side stream
    assert all(run.inits and run.inits[0].text == "nccl" and not run.device_id
               for run in report.runs.values())


@pytest.mark.slow
def test_ring_attention_reading_the_next_block_before_its_wait_is_named():
    report = doctor(RING, 4, "--bug")
    read = at(RING, "scores = q @ k.transpose")
    post = at(RING, "self._reqs = dist.batch_isend_irecv")
    f = finding(report, "buffer_in_flight", {0, 1, 2, 3}, read, post)
    assert "irecv" in f.title + f.gloo and report.status == 1


@pytest.mark.slow
def test_every_cuda_call_of_a_gpu_script_runs_mapped():
    """set_device, device= in every form, .cuda(), .to(..., non_blocking), pin_memory, a
    module's .cuda(), streams, events, record_stream, synchronize, the memory queries, and
    init_process_group("cpu:gloo,cuda:nccl", device_id=...)."""
    report = doctor("gpu/every_cuda_call.py", 2)
    assert report.findings == [] and report.status == 0, report.text()
    assert all("every CUDA call ran" in out.stdout for out in report.outputs.values())
    assert "the script asked for cpu:gloo,cuda:nccl and CUDA" in report.text()
    assert p2p_streams(report) == {"side 1"}
    assert all(run.device_id for run in report.runs.values())


@pytest.mark.slow
def test_a_cpu_script_is_not_said_to_be_mapped():
    """torch.manual_seed reaches torch.cuda.manual_seed_all inside torch: not the script's
    use of CUDA. Its ops carry no stream."""
    report = doctor("ring_attention.py", 4)
    text = report.text()
    assert "mapped onto the CPU" not in text and "used CUDA" not in text, text
    assert p2p_streams(report) == {""}


@pytest.mark.slow
@pytest.mark.parametrize("what, call, line", [
    ("graph", "torch.cuda.CUDAGraph", "graph = torch.cuda.CUDAGraph()"),
    ("kernel", "torch.ops.gpu_only.scale", "y = torch.ops.gpu_only.scale(x)"),
    ("triton", "import triton", "import triton  # noqa")])
def test_a_call_that_cannot_be_mapped_stops_the_run_naming_it(what, call, line):
    report = doctor("gpu/unmappable.py", 2, what)
    assert report.status == 2 and report.findings == [], report.text()
    where = at("gpu/unmappable.py", line).split("/labs/", 1)[1]
    assert f"labs/{where}: NotMapped: {call} cannot run on the CPU" in report.text(), \
        report.text()
    assert report.verdict().startswith("the script stopped after 2 communication calls at a "
                                       "call the doctor cannot run on the CPU"), report.text()


@pytest.mark.slow
def test_a_script_falling_back_on_import_error_runs_its_fallback():
    report = doctor("gpu/unmappable.py", 2, "fallback")
    assert report.status == 0, report.text()
    assert all("flash_attn_func is None" in out.stdout for out in report.outputs.values())


def test_the_mapping_is_on_only_inside_and_covers_every_device_argument():
    """In this process, not a job: the course's own code never sees the stand-in."""
    real = torch.cuda
    with cuda.mapping(3) as state:
        assert torch.cuda is not real and torch.cuda.device_count() == 3
        tensors = [torch.zeros(2, device="cuda"), torch.ones(2, device="cuda:2"),
                   torch.empty(2, device=torch.device("cuda", 1)), torch.ones(2).cuda(),
                   torch.ones(2).to("cuda", non_blocking=True), torch.ones(2).to(0),
                   torch.randn(2, device=0), torch.ones(2).pin_memory(),
                   torch.nn.Linear(2, 2).cuda().weight, torch.ones(2).type("torch.cuda.FloatTensor")]
        generator = torch.Generator(device="cuda")
        tensors.append(torch.randn(2, device="cuda", generator=generator))
        in_thread = []
        thread = threading.Thread(target=lambda: in_thread.append(torch.ones(1, device="cuda")))
        thread.start()
        thread.join()
        # the data is on the CPU; the code calling is told what a GPU run would tell it
        assert all(t.untyped_storage().device.type == "cpu" for t in tensors + in_thread)
        assert [t.is_cuda for t in tensors + in_thread] == [True] * 7 + [False] + [True] * 4
        assert state.used and state.stream_name() == ""
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            assert state.stream_name() == "side 1" and torch.cuda.current_stream() is side
        assert state.stream_name() == "default"
        with pytest.raises(cuda.NotMapped, match="torch.cuda.graph cannot run on the CPU"):
            torch.cuda.graph
        with pytest.raises(ImportError, match="flash_attn"):
            import flash_attn  # noqa: F401
    assert torch.cuda is real and not torch.cuda.is_available()
    assert torch.Generator is torch._C.Generator
    with pytest.raises((AssertionError, RuntimeError)):
        torch.zeros(1, device="cuda")
