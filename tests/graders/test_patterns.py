"""Lesson 09 (labs/patterns.py): graders for the 1F1B neighbour exchange
(send_forward_recv_backward, send_backward_recv_forward) and the K/V rotation (rotate_kv)."""
import pytest
import torch

from labs.harness.grading import (GradeFailure, call, check_close, check_fresh, check_one_batch,
                                  check_untouched, grade, implementation, in_case, recording,
                                  seeded)
from labs.harness.grading.inputs import every_dtype
from labs.harness.grading.record import ignoring_tags
from labs.patterns import full_attention, make_qkv, reference_step, ring_attention, run_1f1b

# -- Exercise 1: the neighbour exchange ---------------------------------------------------


# A small activation, a large one (the method on every size), and a transposed view (not
# contiguous: "any shape").
EXCHANGE_SHAPES = [(2, 3), ((1 << 20) + 1,), (4, 3)]
TRANSPOSED = 2


def _activation(rank, i, dtype_name):
    x = seeded(rank, EXCHANGE_SHAPES[i], dtype_name, i, special=True)
    return x.t() if i == TRANSPOSED else x


def exchange_grader_worker(rank, world_size, impl, dtype_name):
    """Rank 0 is stage s, rank 2 is stage s + 1 (rank 1 is another job's: idle): both send
    at the same moment. The neighbour is the argument, never rank +- 1."""
    if rank == 1:
        return []
    name = "send_forward_recv_backward" if rank == 0 else "send_backward_recv_forward"
    fn = implementation(impl, "patterns", name)
    return [call(fn, _activation(rank, i, dtype_name), 2 - rank, must_complete=True,
                 case=f"{dtype_name}, shape {shape}{', transposed' if i == TRANSPOSED else ''}")
            for i, shape in enumerate(EXCHANGE_SHAPES)]


EXCHANGE = "send_forward_recv_backward / send_backward_recv_forward"


@pytest.mark.grades("send_forward_recv_backward", "send_backward_recv_forward")
@pytest.mark.parametrize("dtype_name", ["float32", "int64", "float64", "bfloat16"])
def test_neighbour_exchange_head_to_head(impl, dtype_name):
    what = EXCHANGE
    results = grade(exchange_grader_worker, 3, args=(impl, dtype_name), what=what)
    for rank, calls in enumerate(results):
        for i, (shape, got) in enumerate(zip(EXCHANGE_SHAPES, calls)):
            case = f"{what} ({dtype_name}, shape {shape}" + \
                (", transposed: not contiguous)" if i == TRANSPOSED else ")")
            check_close(got.result, _activation(2 - rank, i, dtype_name), rank=rank, what=case)
            check_fresh(got, rank=rank, what=case, hint="receive into a new tensor")
            check_untouched(got, rank=rank, what=case)
            # NCCL needs the pair grouped (lesson 09): unbatched, both stages' sends can wait
            # for receives posted after them; gloo does not show it.
            check_one_batch(got.events, case, rank=rank, n_ops=2,
                            expected="the send and the receive")


def pipeline_grader_worker(rank, world_size, impl):
    fwd = implementation(impl, "patterns", "send_forward_recv_backward")
    bwd = implementation(impl, "patterns", "send_backward_recv_forward")
    return run_1f1b(rank, world_size, fwd, bwd, n_micro=4)


@pytest.mark.grades("send_forward_recv_backward", "send_backward_recv_forward")
@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_pipeline_1f1b_matches_unsplit_model(impl, world_size):
    what = f"1F1B pipeline step with {EXCHANGE} ({world_size} stages)"
    results = grade(pipeline_grader_worker, world_size, args=(impl,), what=what)
    ref_loss, ref_grads = reference_step(world_size)
    loss = results[-1][1]
    if abs(loss - ref_loss) > 1e-5:
        raise GradeFailure(f"{what}: loss {loss!r}, expected {ref_loss!r} (unsplit model)")
    for rank, (_, _, grads) in enumerate(results):
        for i, (got, expected) in enumerate(zip(grads, ref_grads[rank])):
            check_close(got, expected, rank=rank, atol=1e-6,
                        what=f"{what}: gradient of stage {rank}'s parameter {i}")


# -- Exercise 2: rotate_kv -------------------------------------------------------------------


def rotate_grader_worker(rank, world_size, impl):
    """rotate_kv returns its works unwaited, so the worker checks what `call` would."""
    rotate_kv = implementation(impl, "patterns", "rotate_kv")
    k, v = seeded(rank, (2, 3), "float32", 0), seeded(rank, (2, 3), "float32", 1)
    k0, v0 = k.clone(), v.clone()
    with in_case("k, v of shape (2, 3)"), recording() as events:
        out = rotate_kv(k, v)
    if not (isinstance(out, tuple) and len(out) == 3):
        return {"error": f"returned {type(out).__name__}, expected (k_next, v_next, works)"}
    if any(e.op == "wait" for e in events):     # waiting twice on a gloo Work would hang
        return {"error": "waited inside rotate_kv; return the works unwaited so that the "
                         "caller can compute attention while K and V travel"}
    k_next, v_next, works = out
    for w in works:
        w.wait()
    large = _rotate_large(rotate_kv, rank)
    dtypes = _rotate_every_dtype(rotate_kv, rank)
    nccl = _rotate_tags_ignored(rotate_kv, rank)
    # Then the whole of ring attention with it.
    q_all, k_all, v_all = make_qkv(16 * world_size, 8)
    q, kb, vb = (t.chunk(world_size)[rank].contiguous() for t in (q_all, k_all, v_all))
    return {"k_next": k_next, "v_next": v_next, "events": events,
            "fresh": {k_next.data_ptr(), v_next.data_ptr()}.isdisjoint(
                {k.data_ptr(), v.data_ptr()}),
            "unchanged": torch.equal(k, k0) and torch.equal(v, v0), "large": large,
            "dtypes": dtypes, "nccl": nccl, "attention": ring_attention(q, kb, vb, rotate=rotate_kv)}


LARGE_KV = ((1 << 18) + 1, 4)
LARGE_V = (((1 << 18) + 1, 2), "float64")   # v need not be shaped like k (another head size)


def _rotate_large(rotate_kv, rank):
    """rotate_kv on large blocks too (the method on every size), v another shape and dtype
    than k: (k_next, v_next)."""
    k, v = seeded(rank, LARGE_KV, "float32", 2), seeded(rank, *LARGE_V, 3)
    with in_case(f"k of shape {LARGE_KV}, v of shape {LARGE_V[0]} {LARGE_V[1]}"):
        k_next, v_next, works = rotate_kv(k, v)
    for w in works:
        w.wait()
    return k_next, v_next


def _rotate_every_dtype(rotate_kv, rank):
    """rotate_kv on k and v of every other dtype ("any dtype"; the record checks that each
    travels in its own): [(shape, dtype, k_next, v_next)]."""
    done = []
    for salt, (shape, dtype) in enumerate(every_dtype([((2, 3), torch.float32)])[1:], start=10):
        k = seeded(rank, shape, dtype, salt, special=True)
        v = seeded(rank, shape, dtype, salt + 50, special=True)
        with in_case(f"k, v of shape {shape}, {dtype}"):
            k_next, v_next, works = rotate_kv(k, v)
        for w in works:
            w.wait()
        done.append((shape, dtype, k_next, v_next))
    return done


# On NCCL, which ignores tags, the sends and receives between two ranks pair by their order
# alone (lesson 02): k and v of one shape and dtype (a mismatch in size would abort gloo),
# every tag 0 while the body runs, as NCCL would pair them.
TAGLESS = ((2, 3), "float32", 4, 5)


def _rotate_tags_ignored(rotate_kv, rank):
    """rotate_kv with every tag ignored (gloo pairs by order then, as NCCL does):
    (k_next, v_next)."""
    shape, dtype, k_salt, v_salt = TAGLESS
    k, v = seeded(rank, shape, dtype, k_salt), seeded(rank, shape, dtype, v_salt)
    with ignoring_tags(), in_case(f"k, v of shape {shape}, every tag ignored as on NCCL"):
        k_next, v_next, works = rotate_kv(k, v)
    for w in works:
        w.wait()
    return k_next, v_next


def check_pairs_by_order(what, rank, prev, received):
    """With tags ignored, k_next holds the peer's k and v_next its v; a body that tells them
    apart by tags only gets them crossed, as it would on NCCL."""
    shape, dtype, k_salt, v_salt = TAGLESS
    k, v = seeded(prev, shape, dtype, k_salt), seeded(prev, shape, dtype, v_salt)
    if torch.equal(received[0], v) or torch.equal(received[1], k):
        raise GradeFailure(
            f"{what}: rank {rank} got rank {prev}'s v in k_next (or its k in v_next) once the "
            f"tags were ignored: NCCL ignores tags and pairs the sends and receives between two "
            f"ranks by their order alone (lesson 02), and this rotate_kv posts its receives "
            f"in another order than its sends, telling K from V by tags only. Post the two "
            f"receives in the same order as the two sends (k first, then v)")
    for name, got, expected in (("k_next", received[0], k), ("v_next", received[1], v)):
        check_close(got, expected, rank=rank, what=f"{what}, every tag ignored as on NCCL "
                                                   f"(lesson 02): {name} (should be rank {prev}'s)")


@pytest.mark.parametrize("world_size", [2, 3, 4, 5, 6, 7, 8])
def test_rotate_kv(impl, world_size):
    what = f"rotate_kv on {world_size} ranks"
    results = grade(rotate_grader_worker, world_size, args=(impl,), what=what)
    full = full_attention(*make_qkv(16 * world_size, 8)).chunk(world_size)
    for rank, r in enumerate(results):
        if "error" in r:
            raise GradeFailure(f"{what}: rank {rank} {r['error']}")
        check_one_batch(r["events"], what, rank=rank, n_ops=4,
                        expected="the 4 ops (2 sends, 2 receives)")
        prev = (rank - 1) % world_size
        check_close(r["k_next"], seeded(prev, (2, 3), "float32", 0), rank=rank,
                    what=f"{what}: k_next (should be rank {prev}'s k)")
        check_close(r["v_next"], seeded(prev, (2, 3), "float32", 1), rank=rank,
                    what=f"{what}: v_next (should be rank {prev}'s v)")
        for name, got, (shape, dtype), salt in (("k_next", r["large"][0], (LARGE_KV, "float32"), 2),
                                                ("v_next", r["large"][1], LARGE_V, 3)):
            check_close(got, seeded(prev, shape, dtype, salt), rank=rank,
                        what=f"{what}, shape {shape} {dtype}: {name} (should be rank {prev}'s)")
        for salt, (shape, dtype, k_next, v_next) in enumerate(r["dtypes"], start=10):
            for which, got, seed in (("k_next", k_next, salt), ("v_next", v_next, salt + 50)):
                check_close(got, seeded(prev, shape, dtype, seed, special=True), rank=rank, atol=0, rtol=0,
                            what=f"{what}, {dtype}: {which} (should be rank {prev}'s)")
        check_pairs_by_order(what, rank, prev, r["nccl"])
        if not r["fresh"]:
            raise GradeFailure(f"{what}: rank {rank} received into k or v; receive into new "
                               f"tensors (they are being sent and used for compute)")
        if not r["unchanged"]:
            raise GradeFailure(f"{what}: rank {rank}'s k or v was modified")
        check_close(r["attention"], full[rank], rank=rank, atol=1e-5,
                    what=f"{what}: ring attention with your rotate_kv vs full attention")
