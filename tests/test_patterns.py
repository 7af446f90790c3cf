"""Lesson 09: the 1F1B neighbour exchange and the K/V rotation (graders), the blocking
deadlock, the parity fallback, ring attention vs full attention."""
import pytest
import torch
import torch.distributed as dist

import labs.patterns as lab
from labs import HangError, launch
from labs.harness.grading import GradeFailure, check_close, grade, implementation
from labs.harness.tracing import TRACER

# -- Exercise 1: the neighbour exchange ---------------------------------------------------


def exchange_grader_worker(rank, world_size, impl, dtype_name):
    """Rank 0 is stage s, rank 1 is stage s + 1: both send at the same moment."""
    dtype = getattr(torch, dtype_name)
    mine = (torch.arange(6).reshape(2, 3) + 100 * rank).to(dtype)
    before = mine.clone()
    if rank == 0:
        fn = implementation(impl, "patterns", "send_forward_recv_backward")
        got = fn(mine, 1)
    else:
        fn = implementation(impl, "patterns", "send_backward_recv_forward")
        got = fn(mine, 0)
    fresh = isinstance(got, torch.Tensor) and got.data_ptr() != mine.data_ptr()
    return got, fresh, torch.equal(mine, before)


@pytest.mark.grader
@pytest.mark.parametrize("dtype_name", ["float32", "int64"])
def test_neighbour_exchange_head_to_head(impl, dtype_name):
    what = "send_forward_recv_backward / send_backward_recv_forward"
    results = grade(exchange_grader_worker, 2, args=(impl, dtype_name), timeout=20, what=what)
    for rank, (got, fresh, unchanged) in enumerate(results):
        peer = 1 - rank
        expected = (torch.arange(6).reshape(2, 3) + 100 * peer).to(getattr(torch, dtype_name))
        check_close(got, expected, rank=rank, what=f"{what} ({dtype_name})")
        if not fresh:
            raise GradeFailure(f"{what}: rank {rank} returned the tensor it sent; receive into "
                               f"a new tensor (torch.empty_like)")
        if not unchanged:
            raise GradeFailure(f"{what}: rank {rank}'s tensor to send was modified")


def pipeline_grader_worker(rank, world_size, impl):
    fwd = implementation(impl, "patterns", "send_forward_recv_backward")
    bwd = implementation(impl, "patterns", "send_backward_recv_forward")
    return lab.run_1f1b(rank, world_size, fwd, bwd, n_micro=4)


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [2, 4])
def test_pipeline_1f1b_matches_unsplit_model(impl, world_size):
    what = f"1F1B pipeline step with your neighbour exchange ({world_size} stages)"
    results = grade(pipeline_grader_worker, world_size, args=(impl,), timeout=30, what=what)
    ref_loss, ref_grads = lab.reference_step(world_size)
    loss = results[-1][1]
    if abs(loss - ref_loss) > 1e-5:
        raise GradeFailure(f"{what}: loss {loss!r}, expected {ref_loss!r} (unsplit model)")
    for rank, (_, _, grads) in enumerate(results):
        for i, (got, expected) in enumerate(zip(grads, ref_grads[rank])):
            check_close(got, expected, rank=rank, atol=1e-6,
                        what=f"{what}: gradient of stage {rank}'s parameter {i}")


# -- Exercise 2: rotate_kv -------------------------------------------------------------------


def rotate_grader_worker(rank, world_size, impl):
    rotate_kv = implementation(impl, "patterns", "rotate_kv")
    k = torch.full((2, 3), float(rank))
    v = torch.full((2, 3), 10.0 + rank)
    k0, v0 = k.clone(), v.clone()
    start = len(TRACER.events)
    out = rotate_kv(k, v)
    if not (isinstance(out, tuple) and len(out) == 3):
        return {"error": f"returned {type(out).__name__}, expected (k_next, v_next, works)"}
    k_next, v_next, works = out
    during = TRACER.events[start:]
    p2p = [e for e in during if e.op in ("isend", "irecv")]
    waited = any(e.op == "wait" for e in during)
    batches = {e.batch for e in p2p}
    for w in works:
        w.wait()
    # Then the whole of ring attention with it.
    q_all, k_all, v_all = lab.make_qkv(16 * world_size, 8)
    q, kb, vb = (t.chunk(world_size)[rank].contiguous() for t in (q_all, k_all, v_all))
    attention = lab.ring_attention(q, kb, vb, rotate=rotate_kv)
    return {"k_next": k_next, "v_next": v_next,
            "fresh": k_next.data_ptr() not in (k.data_ptr(), v.data_ptr())
            and v_next.data_ptr() not in (k.data_ptr(), v.data_ptr()),
            "unchanged": torch.equal(k, k0) and torch.equal(v, v0),
            "one_batch": len(p2p) == 4 and len(batches) == 1 and None not in batches,
            "n_ops": len(p2p), "batches": sorted(b for b in batches if b is not None),
            "waited": waited, "attention": attention}


@pytest.mark.grader
@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_rotate_kv(impl, world_size):
    what = f"rotate_kv on {world_size} ranks"
    results = grade(rotate_grader_worker, world_size, args=(impl,), timeout=30, what=what)
    q_all, k_all, v_all = lab.make_qkv(16 * world_size, 8)
    full = lab.full_attention(q_all, k_all, v_all).chunk(world_size)
    for rank, r in enumerate(results):
        if "error" in r:
            raise GradeFailure(f"{what}: rank {rank} {r['error']}")
        if r["waited"]:
            raise GradeFailure(f"{what}: rank {rank} waited inside rotate_kv; return the works "
                               f"unwaited so that the caller can compute meanwhile")
        if not r["one_batch"]:
            raise GradeFailure(f"{what}: rank {rank} posted {r['n_ops']} isend/irecv in batch "
                               f"calls {r['batches']}; expected the 4 ops (2 sends, 2 receives) "
                               f"in one batch_isend_irecv call")
        prev = (rank - 1) % world_size
        check_close(r["k_next"], torch.full((2, 3), float(prev)), rank=rank,
                    what=f"{what}: k_next (should be rank {prev}'s k)")
        check_close(r["v_next"], torch.full((2, 3), 10.0 + prev), rank=rank,
                    what=f"{what}: v_next (should be rank {prev}'s v)")
        if not r["fresh"]:
            raise GradeFailure(f"{what}: rank {rank} received into k or v; receive into new "
                               f"tensors (they are being sent and used for compute)")
        if not r["unchanged"]:
            raise GradeFailure(f"{what}: rank {rank}'s k or v was modified")
        check_close(r["attention"], full[rank], rank=rank, atol=1e-5,
                    what=f"{what}: ring attention with your rotate_kv vs full attention")


# -- behaviour of the lesson's workers ------------------------------------------------------

def test_blocking_exchange_deadlocks_between_the_last_two_stages():
    with pytest.raises(HangError) as info:
        launch(lab.pipeline_step, 4, args=("blocking",), timeout=4, quiet=True)
    statuses = info.value.statuses
    assert statuses[2]["blocked_in"].startswith("send(to 3")
    assert statuses[3]["blocked_in"].startswith("send(to 2")


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
    assert lab.rotation_overlaps_compute(results.trace, 4) is overlap


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
