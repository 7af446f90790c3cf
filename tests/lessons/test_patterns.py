"""Lesson 09 (labs/patterns.py): the blocking deadlock, the parity fallback, ring
attention vs full attention."""
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


def test_parity_fallback_matches_unsplit_model_and_schedule_is_1f1b():
    results = launch(lab.pipeline_step, 4, args=("parity",), quiet=True)
    ref_loss, ref_grads = lab.reference_step(4)
    assert abs(results[3][1] - ref_loss) < 1e-5
    for rank, (_, _, grads) in enumerate(results):
        assert all(torch.allclose(g, e, atol=1e-6) for g, e in zip(grads, ref_grads[rank]))
    assert " ".join(results[0][0]) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"
    assert " ".join(results[3][0]) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"


@pytest.mark.parametrize("overlap", [True, False])
def test_ring_attention_equals_full_attention(overlap):
    results = launch(lab.ring_attention_worker, 4, args=(256, 16, overlap), quiet=True)
    full = lab.full_attention(*lab.make_qkv(256, 16))
    assert torch.allclose(torch.cat(list(results)), full, atol=1e-5)
    assert view.rotation_overlaps_compute(results.trace, 4) is overlap


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
