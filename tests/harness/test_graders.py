"""The graders themselves: each fails on the stub and on every wrong body learners write
(tests/graders/bodies/), saying what the lesson expected, and passes a correct body written
in another style than solutions/ (CI grades solutions/ in tests/graders). The bodies and
what each failure must say: tests/harness/catalogue/. Unit tests feed the checks and the
grade sheet made-up results.
"""
import re
import time

import pytest
import torch

from labs.harness.grading import GradeFailure, call, check_messages, check_overlap
from labs.harness.grading.order import order_problems
from labs.harness.grading.ops import Op
from labs.harness.ranks.tracing import Event
from tests.graders import (test_algorithms, test_batching, test_collectives, test_deadlocks,
                           test_doctor, test_gradients, test_jobs, test_layouts, test_p2p,
                           test_patterns, test_ring, test_waiting)
from tests.harness.catalogue import RIGHT, WRONG
from tests.harness.catalogue.messages import BODIES, HUNG

GRADERS = list(dict.fromkeys((grader, arg) for grader, arg, *_ in WRONG + RIGHT))


def _id(case):
    return f"{case[0].__name__.removeprefix('test_')}-{case[2].split(':')[1]}-{case[1]}"


@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("grader, arg, body, message", WRONG, ids=map(_id, WRONG))
def test_a_wrong_body_fails_saying_why(grader, arg, body, message):
    started = time.perf_counter()
    messages = message if isinstance(message, tuple) else (message,)
    with pytest.raises(GradeFailure, match="|".join(map(re.escape, messages))):
        grader(f"{BODIES}.{body}", arg)
    if message == HUNG:     # a deadlock is reported within seconds, not minutes
        assert time.perf_counter() - started < 30


# Lesson 11's job runs under torchrun, outside the launcher, all bodies in one run.
JOB_WRONG = {
    # its sum through the process group's own method or a functional collective
    "jobs.unlisted6:ring_job_pg_allreduce": "the trace shows all_reduce",
    "jobs.unlisted6:ring_job_functional": "the trace shows all_reduce",
    # the total computed from the job's known inputs, a token passed around for show
    "jobs.red10:ring_job_formula": "the ring all-reduce sends 4 chunks",
    "jobs.red11_a:ring_job_star": "the ring sends only to rank",          # through rank 0
    "jobs.red11_a:ring_job_widened": "float32 as the tensor is",          # a float64 ring
    "jobs.red11_a:ring_job_torch_chunk": "ring_job(2, timeout_s=9)",      # fewer elements than ranks
    "jobs.red11_a:ring_job_unwaited": "never waited for",                 # isends never waited
}
JOB_RIGHT = ["jobs.red11_a:ring_job_device_backend",                       # "cpu:gloo"
             "jobs.red11_a:ring_job_barrier_before_leaving"]


@pytest.mark.all_lane          # the catalogue: make test-all
def test_ring_job_grader_sees_every_door_and_the_ring(tmp_path):
    records = test_jobs.run_probe(tmp_path, *[f"{BODIES}.{b}" for b in [*JOB_WRONG, *JOB_RIGHT]])
    cases = {body: {rank: record[f"{BODIES}.{body}"] for rank, record in records.items()}
             for body in [*JOB_WRONG, *JOB_RIGHT]}
    for body, message in JOB_WRONG.items():
        with pytest.raises(GradeFailure, match=re.escape(message)):
            test_jobs.check_ring_job(cases[body])
    for body in JOB_RIGHT:
        test_jobs.check_ring_job(cases[body])


@pytest.mark.all_lane          # the catalogue: make test-all
@pytest.mark.parametrize("grader, arg, body", RIGHT, ids=map(_id, RIGHT))
def test_a_correct_body_in_another_style_passes(grader, arg, body):
    grader(f"{BODIES}.{body}", arg)


@pytest.mark.all_lane          # the stubs proof: make test-all
@pytest.mark.parametrize("grader", sorted({g for g, _ in GRADERS}, key=lambda g: (g.__module__, g.__name__)),
                         ids=lambda g: g.__name__)
def test_every_grader_fails_on_its_stub(grader):
    """A function stub says it is not written yet; lesson 12's script, as shipped, is the
    buggy script the learner fixes: the doctor's problems are its grade."""
    arg = next(a for g, a in GRADERS if g is grader)
    if grader is test_doctor.test_halo_exchange:
        arg = 3                 # the shipped script's problems at 3 ranks: 7, NCCL's
        #                         creation cycle of per-pair communicators among them
    expected = ("the doctor reports 7 problem(s) (buffer_in_flight, lazy_communicators"
                if grader is test_doctor.test_halo_exchange
                else "is not implemented yet: write its body in labs/")
    with pytest.raises(GradeFailure, match=re.escape(expected)):
        grader("labs", arg)


def test_every_exercise_grader_is_tested_here():
    """A new grader test in one of these files gets a wrong and a right body above."""
    tested = {g for g, _ in GRADERS}
    for module in (test_algorithms, test_batching, test_collectives, test_deadlocks,
                   test_doctor, test_gradients, test_layouts, test_p2p, test_patterns, test_ring,
                   test_waiting):
        found = {f for name, f in vars(module).items() if name.startswith("test_")}
        assert found <= tested, f"untested graders: {sorted(f.__name__ for f in found - tested)}"


# -- the checks and the grade sheet, on made-up results --------------------------------------

def _event(rank, op, seq, batch=None, peer=1, numel=4, dtype="float32", **kw):
    return Event(rank=rank, op=op, peer=peer, numel=numel, dtype=dtype, batch=batch, seq=seq,
                 blocking=op in ("send", "recv", "wait", "compute"), **kw)


def _op(kind, peer, seq, waited_at, api="batch_isend_irecv"):
    return Op(kind, kind, peer, 4, "float32", seq=seq, returned_work=True, waited=True,
              waited_at=waited_at, api=api)


def test_requests_are_waited_no_later_than_the_reference_waits_them():
    """Two ring steps, each waited whole before the next posts: a body that waits a step's
    send only at the end fails; blocking calls in the reference leave the body free."""
    ring = [_op("send", 1, 0, 2), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("recv", 2, 3, 4)]
    same = [_op("recv", 2, 0, 2), _op("send", 1, 1, 2), _op("recv", 2, 2, 4), _op("send", 1, 3, 4)]
    assert order_problems(same, ring, rank=0) == []
    late = [_op("send", 1, 0, 4), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("recv", 2, 3, 4)]
    assert "before waiting for a send of 4 x float32 to rank 1 (its 1st float32 send" in \
        order_problems(late, ring, rank=0)[0]
    blocking = [_op("send", 1, 0, 1, api="send"), _op("recv", 2, 1, 2, api="recv")]
    overlapped = [_op("send", 1, 0, 2), _op("recv", 2, 1, 2)]
    assert order_problems(overlapped, blocking, rank=0) == []


def test_calls_on_other_dtypes_may_come_in_any_order():
    """One ring per dtype group, the groups in another order than the reference's: the k-th
    float16 message is paired with the reference's k-th float16 one (issue 52 item 8)."""
    def op(kind, dtype, seq, waited_at):
        return Op(kind, kind, 1, 4, dtype, seq=seq, returned_work=True, waited=True,
                  waited_at=waited_at, api="batch_isend_irecv")
    ref = [op("send", "float16", 0, 2), op("recv", "float16", 1, 2),
           op("send", "float32", 2, 4), op("recv", "float32", 3, 4)]
    swapped = [op("send", "float32", 0, 2), op("recv", "float32", 1, 2),
               op("send", "float16", 2, 4), op("recv", "float16", 3, 4)]
    assert order_problems(swapped, ref, rank=0) == []
    # within one dtype the steps stay: a step's send waited only after the next step posted
    two = ref + [op("send", "float32", 4, 6), op("recv", "float32", 5, 6)]
    late = [op("send", "float32", 0, 6), op("recv", "float32", 1, 2),
            op("send", "float32", 2, 6), op("recv", "float32", 3, 6),
            op("send", "float16", 4, 6), op("recv", "float16", 5, 6)]
    assert "its 1st float32 send to that rank" in order_problems(late, two, rank=0)[0]


def test_a_pipeline_forwards_each_segment_before_waiting_the_next():
    # reference: receives r0, r1 posted; wait r0 (at 2), send s0 (seq 2), wait r1 (at 3)...
    pipe = [_op("recv", 2, 0, 2), _op("recv", 2, 1, 3), _op("send", 1, 2, 4), _op("send", 1, 3, 4)]
    step = [_op("recv", 2, 0, 2), _op("recv", 2, 1, 2), _op("send", 1, 2, 4), _op("send", 1, 3, 4)]
    assert order_problems(pipe, pipe, rank=0, pipelined=True) == []
    assert "the pipeline forwards each segment" in \
        order_problems(step, pipe, rank=0, pipelined=True)[0]


def test_overlap_needs_post_then_compute_then_wait():
    post = [_event(0, "isend", 0, batch=0), _event(0, "irecv", 1, batch=0)]
    compute = _event(0, "compute", 2, label="mm")
    waits = [_event(0, "wait", 3, waits_for=0), _event(0, "wait", 4, waits_for=1)]
    check_overlap(post + [compute] + waits, "x", rank=0, label="mm", task="the product")
    early = _event(0, "compute", -1, label="mm")
    with pytest.raises(GradeFailure, match="computed the product before posting"):
        check_overlap([early] + post + waits, "x", rank=0, label="mm", task="the product")
    late = _event(0, "compute", 9, label="mm")
    with pytest.raises(GradeFailure, match=r"waited \(wait\(4 x float32\)\) before computing"):
        check_overlap(post + waits + [late], "x", rank=0, label="mm", task="the product")
    with pytest.raises(GradeFailure, match="never computed the product"):
        check_overlap(post + waits, "x", rank=0, label="mm", task="the product")


def test_messages_are_checked_for_dtype_size_and_total():
    sent = [_event(0, "isend", i, numel=n) for i, n in enumerate((3, 3, 2))]
    check_messages(sent, "x", rank=0, dtype="float32", largest=3, total=8, why="the ring")
    with pytest.raises(GradeFailure, match=r"sent 3 message\(s\), the largest 3 elements, 8 in "
                                           r"all; expected messages of at most 3 elements, at "
                                           r"most 6 in all: y"):
        check_messages(sent, "x", rank=0, dtype="float32", largest=3, total=6, why="y")
    with pytest.raises(GradeFailure, match=r"own dtype \(bfloat16\)"):
        check_messages(sent, "x", rank=0, dtype="bfloat16", largest=3, total=8, why="y")


def test_a_call_records_what_became_of_its_arguments():
    x = torch.zeros(2, 2)
    assert call(lambda t: t, x).returned_first and call(lambda t: t, x).aliased
    assert call(lambda t: t.clone(), x).aliased is False

    def fill(out, inputs):
        out.fill_(1.0)
        inputs[0] = torch.zeros(3)
        return out.view(-1)

    done = call(fill, x, [torch.ones(3), torch.ones(2)])
    assert (done.changed, done.names, done.aliased, done.replaced) == \
        ([0, 1], ["out", "inputs"], True, {1: [0]})
    x.zero_()
    assert torch.equal(done.result, torch.ones(4)), "the result is a copy taken on return"


@pytest.mark.parametrize("message, fragment", [
    ("rank 0 has (5,) float32 but peer 1 has (6,) float32", None),
    ("local torch.Size([2, 3])/torch.float32, remote torch.Size([3, 2])/torch.float32", None),
    ("shapes [5] vs [6], dtypes torch.float32 and torch.float32", None),
    ("shapes differ: 5 != 6 (float32)", None),
    ("mismatch with peer 1", "(5,) torch.float32 is missing"),
    ("rank 0 has (5,) float32, peer 1 another shape", "(6,) torch.float32 is missing"),
])
def test_checked_exchange_accepts_any_wording_that_names_both_sides(message, fragment):
    mine, theirs = torch.zeros(5), torch.zeros(6)
    if "[2, 3]" in message:
        mine, theirs = torch.zeros(2, 3), torch.zeros(3, 2)
    named = [test_deadlocks._names(message, t) for t in (mine, theirs)]
    assert all(named) == (fragment is None)




def test_your_labs_may_not_send_through_solutions_tests_or_the_engine():
    """Graded in labs/, no op may come from solutions/ or tests/ (the bodies here stand for
    a learner's code, so they may use copies of the references) or lesson 10's engine."""
    import os

    from labs.harness import COURSE_ROOT
    from labs.harness.grading.graded import _not_yours
    from solutions.ring import ring_all_reduce
    codes, prefixes = _not_yours("labs", ring_all_reduce)
    assert any(code is ring_all_reduce.__code__ for code in codes)
    for folder in ("solutions", os.path.join("tests", "graders", "bodies"),
                   os.path.join("tests", "harness"), os.path.join("labs", "views")):
        assert os.path.join(COURSE_ROOT, folder) + os.sep in prefixes
    # the graders may wrap what a body calls (to count a learner's ring_all_reduce calls)
    assert not any(os.path.join(COURSE_ROOT, "tests", "graders", "test_ring.py").startswith(p)
                   for p in prefixes)
    assert os.path.join(COURSE_ROOT, "labs", "plans.py") in prefixes
    assert not any(p.startswith(os.path.join(COURSE_ROOT, "tests"))
                   for p in _not_yours("tests.graders.bodies.ring", ring_all_reduce)[1])


def test_a_messages_gradient_pieces_are_found_whatever_its_scale():
    """The positional probe (sums.py): element j of a message adding up ranks m holds
    c * (m + k * j * 2**p) for the body's scale c. Two gradients (positions 0-4 and 5-9)
    packed last first: one descent between two pieces, at any scale (a mean may divide
    before the ring); one gradient reversed: four descents in one piece."""
    from labs.harness.grading.buffers import decoded
    world_size, ranks, k = 2, 3, 2

    def message(positions, scale):
        return torch.tensor([scale * (ranks + k * j * 2 ** world_size) for j in positions])
    for scale in (1.0, 0.5, 1 / 3, 0.7, 1e-3):
        _, descents, _, pieces = decoded([message([5, 6, 7, 8, 9, 0, 1, 2, 3, 4], scale)],
                                         world_size, starts=(0, 5))
        assert (descents, pieces) == (1, 2), scale
        _, descents, _, pieces = decoded([message([4, 3, 2, 1, 0], scale)], world_size,
                                         starts=(0, 5))
        assert (descents, pieces) == (4, 1), scale


def test_gloos_own_failures_are_told_in_lesson_04s_words():
    """A receiver killed by gloo for a buffer smaller than the message, a send to the rank's
    own process: what the code did, not the signal or the enforce line."""
    from labs import WorkerError
    from labs.harness.grading import gloo_said
    aborted = WorkerError("rank 1 was killed by signal SIGABRT", ranks=[1],
                          causes={1: "was killed by signal SIGABRT"})
    aborted.outputs = {1: "terminate called after throwing an instance of "
                          "'gloo::EnforceNotMet'\n  what():  [enforce fail at /x/gloo/transport/"
                          "tcp/pair.cc:456] op.preamble.length <= op.nbytes. 96 vs 48. Received "
                          "data size doesn't match expected size."}
    aborted.trace = [_event(1, "irecv", 3, peer=0, numel=12, dtype="float32"),
                     _event(0, "isend", 3, peer=1, numel=12, dtype="int64")]
    aborted.trace[0].t_done = None
    rank, said = gloo_said.explained(aborted)
    assert rank == 1 and said.startswith("received a message larger than its buffer (96 bytes "
                                         "into a buffer of 48 in irecv(from 0")
    assert "rank 0 sent isend(to 1" in said and "lesson 04" in said
    assert gloo_said.retold("  what():  [enforce fail at x.cc:1] ...") is None
    itself = WorkerError("", ranks=[0], causes={0: "RuntimeError: [enforce fail at /x/gloo/"
                                                   "transport/tcp/pair.cc:801] state_ >= "
                                                   "CONNECTED. 1 vs 4. Pair is not connected"})
    itself.outputs, itself.trace = {}, [_event(0, "irecv", 0, peer=0)]
    rank, said = gloo_said.explained(itself)
    assert rank == 0 and said.startswith("sent to or received from itself (irecv(from 0")
    assert "[enforce fail" not in said and "lesson 04" in said
