"""Torch's own P2P docs as the doctor's rules, and errors torch raised as the diagnosis:

- every note and warning paragraph of torch's point-to-point docstrings (parsed here, from
  the installed torch) is listed in labs/doctor/torch_docs.py as a rule or a stated limit;
- the rules, on real torchrun jobs, both ways: a GPU script that never sets its device
  (same_gpu), a loop polling is_completed(), errors raised by torch's own Python (the same on
  NCCL) and what they leave behind on the peers (one bug, one problem).
"""
from __future__ import annotations

import ast
import re

import pytest
import torch.distributed.distributed_c10d as c10d

from labs.doctor import CLEAN
from labs.doctor.findings import LESSON
from labs.doctor.torch_docs import APIS, NOTES, notes_of
from tests.doctor.sweeps import over_sizes
from tests.doctor.jobs import at, doctor



def _docstrings() -> dict:
    tree = ast.parse(open(c10d.__file__).read())
    return {n.name: ast.get_docstring(n) or "" for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name in APIS}


def _paragraphs(doc: str) -> list[str]:
    """Each paragraph of each `.. note::` / `.. warning::` block, spaces collapsed."""
    out, block = [], None
    for line in doc.splitlines() + ["end"]:
        start = re.match(r"\.\. (note|warning)::(.*)", line)
        if start:
            out += _split(block) if block is not None else []
            block = [start.group(2)]
        elif block is not None and (not line.strip() or line.startswith("    ")):
            block.append(line)
            continue
        elif block is not None:
            out += _split(block)
            block = None
    return out


def _split(block: list) -> list[str]:
    text = "\n".join(block)
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_every_note_and_warning_of_torchs_p2p_docstrings_is_a_rule_or_a_stated_limit():
    docs = _docstrings()
    assert set(docs) == set(APIS), f"not found in torch: {set(APIS) - set(docs)}"
    used = set()
    for api, doc in docs.items():
        for paragraph in _paragraphs(doc):
            listed = [n for n in notes_of(api) if n.says in paragraph]
            assert listed, f"{api}'s docstring says, and torch_docs.py does not list:\n{paragraph}"
            used |= set(listed)
    assert used == set(NOTES), f"listed, not in torch's docstrings: {set(NOTES) - used}"
    for note in NOTES:
        assert note.kinds or note.limit, note
        assert all(k in LESSON for k in note.kinds), note


def test_the_parser_sees_the_two_paragraphs_of_batch_isend_irecvs_note():
    found = _paragraphs(_docstrings()["batch_isend_irecv"])
    assert len(found) == 2 and "set_device" in found[0] and "first collective" in found[1]


@pytest.mark.rule("same_gpu", "hazard")
@pytest.mark.slow
@pytest.mark.parametrize("nproc", over_sizes(2, 3, 4))
def test_ranks_on_one_gpu_are_named_at_their_first_nccl_call(nproc):
    report = doctor("gpu/no_set_device.py", nproc)
    found = report.by_kind("same_gpu")
    assert report.status == 1 and len(found) == 1, report.text()
    f = found[0]
    assert set(f.ranks) == set(range(nproc)) and f.nccl_only
    assert at("gpu/no_set_device.py", "works = dist.batch_isend_irecv") in f.first_where
    assert "Duplicate GPU detected" in f.nccl and "src/init.cc" in f.source
    assert "set_device" in f.source


@pytest.mark.slow
@pytest.mark.parametrize("args, nproc", over_sizes(
    ((), 2), pytest.param((), 3, marks=pytest.mark.rule("same_gpu", "fixed")), ((), 4),
    (("--device-id",), 3)))
def test_set_device_or_device_id_gets_a_clean_bill(args, nproc):
    report = doctor("gpu/no_set_device_fixed.py", nproc, *args)
    assert report.status == 0 and not report.problems, report.text()
    assert CLEAN in report.text()


@pytest.mark.rule("polled_not_waited", "hazard")
@pytest.mark.slow
def test_a_polling_loop_is_said_as_such_with_no_injected_exception():
    report = doctor("polling_forever.py", 2)
    text = report.text()
    assert report.kinds() == {"polled_not_waited"}, text
    f = report.by_kind("polled_not_waited")[0]
    assert at("polling_forever.py", "while not all") in f.first_where
    assert "never ends" in f.gloo and "default stream" in f.nccl and "loop ends there" in f.nccl
    assert "GradeFailure" not in text and "the script raised" not in text
    assert report.status == 1


@pytest.mark.rule("polled_not_waited", "fixed")
@pytest.mark.rule("unwaited", "fixed")
@pytest.mark.rule("partly_waited", "fixed")
@pytest.mark.slow
def test_polling_then_waiting_gets_a_clean_bill():
    report = doctor("polling_then_wait.py", 2)
    assert report.status == 0 and not report.problems, report.text()


@pytest.mark.slow
@pytest.mark.parametrize("script, kind, words", [
    pytest.param("python_error_self.py", "self", "send", marks=pytest.mark.rule("self", "hazard")),
    pytest.param("python_error_op.py", "call_failed", "P2POp.__new__",
                 marks=pytest.mark.rule("call_failed", "hazard"))])
def test_an_error_raised_in_torchs_python_is_the_same_on_nccl_and_one_problem(script, kind,
                                                                               words):
    report = doctor(script, 2)
    text = report.text()
    assert [f.kind for f in report.problems] == [kind], text
    f = report.problems[0]
    assert f.ranks == (0,) and "ValueError" in f.gloo
    assert "the same on NCCL" in f.nccl and "before any backend" in f.nccl and words in f.nccl
    assert any("as a consequence" in line and "rank 1" in line for line in f.extra), text
    assert "Connection closed by peer" not in text.split("then, as a consequence")[0]


@pytest.mark.slow
# python_error_self.py --fixed sends to the peer: also the nearest twin of a send that
# nothing receives (snippet1.py's send to itself)
@pytest.mark.parametrize("script", [
    pytest.param("python_error_self.py", marks=[pytest.mark.rule("self", "fixed"),
                                                pytest.mark.rule("unmatched_send", "fixed")]),
    pytest.param("python_error_op.py", marks=pytest.mark.rule("call_failed", "fixed"))])
def test_the_twins_of_torchs_python_errors_get_a_clean_bill(script):
    report = doctor(script, 2, "--fixed")
    assert report.status == 0 and not report.problems, report.text()



@pytest.mark.slow
def test_object_lists_get_a_clean_bill_and_the_limits_torch_warns_of():
    report = doctor("object_lists.py", 2)
    text = report.text()
    assert report.status == 0 and not report.problems, text
    line = next(n for n in report.notes if n.startswith("not checked"))
    assert "send_object_list" in line and "recv_object_list" in line
    assert "pickle" in line and "performance" in line and "GPU -> CPU" in line

# How a script reads batch_isend_irecv's list, judged on a one-element list (NCCL's one Work):
# the reads flagged (what the agent tells the doctor) and the ones right on both.
WORKS_READS = [
    ("a, b = works", "unpack"), ("(a, b), c = (works, 1)", "unpack"),
    ("works[1].wait()", "index"), ("works[-2].wait()", "index"),
    ("for i, op in enumerate(ops): works[i].wait()", "index"),
    ("for op, w in zip(ops, works): w.wait()", "zip"),
    ("assert len(works) == len(ops)", "len"), ("ok = len(ops) == len(works)", "len"),
    ("ok = len(works) > 1", "len"), ("ok = 2 == len(works)", "len"),
    ("for i in range(len(works)): works[i].wait()", None), ("works[-1].wait()", None),
    ("works[0].wait()", None), ("for w in works[::-1]: w.wait()", None),
    ("*rest, last = works", None), ("first, *rest = works", None),
    ("for w in works: w.wait()", None), ("ok = len(works) >= 1", None),
    ("n = len(works)\nwhile n:\n    n -= 1\n    works[n].wait()", None),
    ("i = 0\nwhile i < len(works):\n    works[i].wait()\n    i += 1", None),
    ("ws = list(works)", None), ("[w.wait() for w in works]", None),
]


class _Work:
    def wait(self):
        return True


@pytest.mark.parametrize("code, flagged", WORKS_READS)
@pytest.mark.parametrize("in_function", [False, True])
def test_a_read_of_the_works_list_is_flagged_when_it_breaks_on_one_work(code, flagged,
                                                                          in_function):
    from labs.doctor.works import Works
    told = []
    works = Works([_Work(), _Work()], 0, lambda event, **f: told.append(f["text"]))
    scope = {"works": works, "ops": ["send", "recv"]}
    if in_function:
        body = "\n".join("    " + line for line in code.splitlines())
        exec(compile(f"def f(works, ops):\n{body}\n", __file__, "exec"), scope)
        scope["f"](works, scope["ops"])
    else:
        exec(compile(code, __file__, "exec"), scope)
    assert told[:1] == ([flagged] if flagged else []), (code, told)
