"""The doctor on code nobody here wrote: PyTorch's own pipeline schedules
(torch.distributed.pipelining) and a neighbour exchange as Megatron-LM writes it
(`_batched_p2p_ops`, `torch.cuda.synchronize()` after the batch), each clean when correct
and named at its line with one realistic bug. Real torchrun jobs under the doctor.
"""
from __future__ import annotations

import pytest

from labs.doctor import CLEAN
from tests.doctor.sweeps import over_sizes
from tests.doctor.test_doctor import at, doctor, finding

pytestmark = pytest.mark.slow
PIPELINING = "gpu/torch_pipelining.py"
MEGATRON = "gpu/megatron_p2p.py"


@pytest.mark.parametrize("args", [("gpipe",), ("1f1b",), ("1f1b", "--cuda")])
def test_torch_pipelining_schedules_are_clean_and_their_batches_recorded(args):
    report = doctor(PIPELINING, 2, *args)
    assert report.findings == [] and report.status == 0, report.text()
    assert CLEAN in report.text()
    assert "is the whole model's" in report.outputs[1].stdout
    # torch 2.13's schedules post all-send or all-receive lists as plain isend/irecv and
    # mixed ones with batch_isend_irecv: the record sees both, every batch whole
    for run in report.runs.values():
        batched = [c for c in run.calls if c.p2p and c.batch is not None]
        assert run.batches and len(batched) == sum(len(b.seqs) for b in run.batches.values())
        assert {c.peer for c in run.calls if c.p2p} == {1 - run.rank}
    sent = [sum(c.kind == "send" for c in report.runs[r].calls) for r in (0, 1)]
    received = [sum(c.kind == "recv" for c in report.runs[r].calls) for r in (1, 0)]
    assert sent == received and min(sent) >= 4, (sent, received)
    assert ("CUDA mapped onto the CPU" in report.text()) == ("--cuda" in args)


@pytest.mark.rule("real_code", "fixed")
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_megatron_style_neighbour_exchange_is_clean(nproc):
    report = doctor(MEGATRON, nproc)
    assert report.findings == [] and report.status == 0, report.text()
    assert all("matches the whole model's" in out.stdout for out in report.outputs.values())
    assert "the script asked for nccl and CUDA: run on gloo" in report.text()


@pytest.mark.rule("real_code", "hazard")
def test_megatron_style_gradient_sent_to_the_wrong_neighbour_is_named():
    """send_backward posts the gradient as tensor_send_next: at 3 stages the previous stage
    waits for a gradient that went the other way (at 2, next and previous are the same)."""
    report = doctor(MEGATRON, 3, "--bug")
    f = finding(report, "deadlock", {0, 1, 2}, at(MEGATRON, "reqs = dist.batch_isend_irecv"))
    assert "rank 2 waits in isend (batch_isend_irecv) of 16 x float32 to rank 0" in f.gloo
    assert report.status == 1
