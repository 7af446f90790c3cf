"""Lesson 09 (labs/patterns.py): the blocking deadlock, the exchanges without batching
(ungrouped, and Megatron-LM's parity order), ring attention vs full attention, and the
notebook's trace checks and figure."""
from unittest import mock

import matplotlib
import pytest
import torch

import labs.patterns as lab
import labs.views.patterns as view
from labs import HangError, launch


def test_blocking_exchange_deadlocks_between_the_last_two_stages():
    with pytest.raises(HangError) as info:
        launch(lab.pipeline_step, 4, args=("blocking",), timeout=4, quiet=True)
    statuses = info.value.statuses
    assert statuses[2].blocked_in.describe().startswith("send(to 3")
    assert statuses[3].blocked_in.describe().startswith("send(to 2")


@pytest.mark.parametrize("mode", ["ungrouped", "parity"])
def test_exchanges_without_batching_match_unsplit_model_and_schedule_is_1f1b(mode):
    results = launch(lab.pipeline_step, 4, args=(mode,), quiet=True)
    ref_loss, ref_grads = lab.reference_step(4)
    assert abs(results[3][1] - ref_loss) < 1e-5
    for rank, (_, _, grads) in enumerate(results):
        assert all(torch.allclose(g, e, atol=1e-6) for g, e in zip(grads, ref_grads[rank]))
    assert " ".join(results[0][0]) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"
    assert " ".join(results[3][0]) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"
    # No batch, non-blocking ops only: Megatron-LM's path, not lesson 04's blocking one.
    ops = {e.op for e in results.trace if e.op in ("send", "recv", "isend", "irecv")
           and e.batch is None}
    assert {"isend", "irecv"} <= ops
    pairing = view.in_order_pairing(results.trace, 4)
    if mode == "parity":
        assert pairing == [f"stages {s} and {s + 1}: all 16 calls pair up in order"
                           for s in range(3)]
    else:
        assert pairing[2] == ("stages 2 and 3: call 2 is isend(to 3, tag 0, 32 x float32) on "
                              "stage 2, and isend(to 2, tag 0, 32 x float32) on stage 3")


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_parity_order_is_megatrons(rank):
    """The order parity_ordered_p2p posts the four transfers in, on an even and an odd rank."""
    class Recorder:
        def __init__(self):
            self.posted = []

        def post(self, kind):
            def op(tensor, peer):
                self.posted.append(f"{kind} {tensor}")
                return Done()
            return op

    class Done:
        def wait(self):
            pass

    rec = Recorder()
    with mock.patch.object(lab.dist, "get_rank", return_value=rank), \
            mock.patch.object(lab.dist, "isend", rec.post("send")), \
            mock.patch.object(lab.dist, "irecv", rec.post("recv")):
        lab.parity_ordered_p2p("prev", "prev", "next", "next", prev_rank=0, next_rank=2)
    expected = (["send next", "recv prev", "send prev", "recv next"] if rank % 2 == 0 else
                ["recv prev", "send next", "recv next", "send prev"])
    assert rec.posted == expected


@pytest.mark.parametrize("overlap", [True, False])
def test_ring_attention_equals_full_attention(overlap):
    results = launch(lab.ring_attention_worker, 4, args=(256, 16, overlap), quiet=True)
    full = lab.full_attention(*lab.make_qkv(256, 16))
    assert torch.allclose(torch.cat(list(results)), full, atol=1e-5)
    assert view.rotation_overlaps_compute(results.trace, 4) is overlap


def test_ring_attention_figure_labels_k_and_v_on_one_axis():
    matplotlib.use("Agg")
    runs = [launch(lab.ring_attention_worker, 2, args=(64, 8, overlap), quiet=True)
            for overlap in (False, True)]
    fig = view.ring_attention_figure(runs[0].trace, runs[1].trace)
    top, bottom = fig.axes[0], fig.axes[1]
    assert top.get_shared_x_axes().joined(top, bottom)
    texts = [t.get_text() for t in bottom.texts]
    assert {"K\u21921", "V\u21921", "K\u21900", "V\u21900"} <= set(texts)
    matplotlib.pyplot.close(fig)


def test_merge_blocks_is_exact_softmax():
    q, k, v = lab.make_qkv(8, 4)
    out = torch.zeros_like(q)
    lse = torch.full((8,), float("-inf"))
    for kb, vb in zip(k.chunk(3), v.chunk(3)):
        scores = q @ kb.T / 2.0
        out, lse = lab.merge_blocks(out, lse, torch.softmax(scores, -1) @ vb,
                                    torch.logsumexp(scores, -1))
    assert torch.allclose(out, lab.full_attention(q, k, v), atol=1e-6)


def test_demo():
    assert launch(lab.demo, 2, quiet=True) == ["ring attention equals full attention: True"] * 2
    # Before the exercise is done every rank falls back to the parity pipeline step.
    fallback = launch(lab.demo, 2, quiet=True, env={"P2P_COURSE_SOLUTIONS": "0"})
    assert all(r.startswith("rotate_kv is not written yet") for r in fallback), fallback


def test_torch_pipelining_1f1b_gives_the_unsplit_models_gradients():
    results = launch(lab.torch_pipeline_step, 2, args=("1F1B",), quiet=True, timeout=120)
    ref_loss, ref = lab.reference_step(2)
    assert abs(results[-1][0] - ref_loss) < 1e-5
    for rank, (_, grads) in enumerate(results):
        assert all(torch.allclose(g, r, atol=1e-6) for g, r in zip(grads, ref[rank]))


def test_send_object_list_sends_a_size_then_the_pickle():
    res = launch(lab.object_messages, 2, quiet=True)
    sends = [(e.dtype, e.numel) for e in res.trace if e.rank == 0 and e.op == "send"]
    assert sends == [("int64", 1), ("uint8", res[0])]
    assert res[1] == {"step": 7, "lr": 0.1, "stage": "warm-up"}
