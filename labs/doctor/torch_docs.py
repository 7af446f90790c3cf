"""Every note and warning in torch 2.13's docstrings of the point-to-point API, and what the
doctor does with it: a rule it checks (the finding kinds named) or a limit it states here.
tests/doctor/test_torch_docs.py parses those docstrings and fails the day one is not listed.

    isend "Modifying tensor before the request completes"   buffer_in_flight (gloo, observed)
    isend/irecv/send/recv "tag is not supported with NCCL"  tags_ignored_on_nccl, and the NCCL
                                                             half of tag_mismatch
    batch_isend_irecv "must set the current GPU device"     same_gpu (NCCL, modelled)
    batch_isend_irecv "the first collective call"           nccl_first_batch (NCCL, modelled)
    send/recv_object_list "torch.cuda.current_device()"     same_gpu (the device they use)
    send/recv_object_list "serious performance and scalability limitations"   limit: the
        doctor checks correctness, not performance
    send/recv_object_list "pickle ... insecure"              limit: the doctor runs the
        script as it is and cannot judge whom its data comes from
    send/recv_object_list "with GPU tensors is not well supported"   limit: the GPU -> CPU
        copy is a cost, not a correctness problem; not checked
"""
from __future__ import annotations

from dataclasses import dataclass

APIS = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp",
        "send_object_list", "recv_object_list")


@dataclass(frozen=True)
class DocNote:
    """One note or warning paragraph of a docstring: `says` is words of it (spaces
    collapsed); `kinds` the
    finding kinds that check it, or `limit` why the doctor does not."""

    apis: tuple
    says: str
    kinds: tuple = ()
    limit: str = ""


NOTES = (
    DocNote(("isend",), "Modifying ``tensor`` before the request completes",
            ("buffer_in_flight",)),
    DocNote(("isend", "irecv", "send", "recv"), "``tag`` is not supported with the NCCL",
            ("tags_ignored_on_nccl", "tag_mismatch")),
    DocNote(("batch_isend_irecv",), "must set the current GPU device", ("same_gpu",)),
    DocNote(("batch_isend_irecv",), "the first collective call", ("nccl_first_batch",)),
    DocNote(("send_object_list", "recv_object_list"), "``torch.cuda.current_device()``",
            ("same_gpu",)),
    DocNote(("send_object_list", "recv_object_list"), "serious performance and scalability",
            limit="their performance and scalability limits"),
    DocNote(("send_object_list", "recv_object_list"), "is known to be insecure",
            limit="pickle's insecurity (whom the data comes from)"),
    DocNote(("send_object_list", "recv_object_list"), "with GPU tensors is not well supported",
            limit="the GPU -> CPU copy of GPU tensors inside the objects"),
)


def notes_of(api: str) -> list:
    return [n for n in NOTES if api in n.apis]


def limits_used(runs) -> list[str]:
    """The report's lines for the stated limits of the APIs this script called: one line
    per set of limits, naming the APIs that share it."""
    used = {c.api for run in runs.values() for c in run.calls} & set(APIS)
    by_limits = {}
    for api in sorted(used):
        limits = tuple(n.limit for n in notes_of(api) if n.limit)
        if limits:
            by_limits.setdefault(limits, []).append(api)
    return [f"not checked, though torch's docs on {', '.join(apis)} warn of it: "
            f"{'; '.join(limits)}" for limits, apis in by_limits.items()]
