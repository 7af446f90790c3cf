"""The lessons' own functions that communicate: a graded body may not send through them.

The lab modules hold, beside your exercises, the lessons' demonstrations: a correct ring shift
(lesson 07), snippet 3 with its fixes (lesson 08), blocking exchanges, ... A body that calls
one of them has its messages made by the course, not by the method it was asked to write.
These are the lab modules' functions, as the course ships them, that call torch.distributed
to communicate, less the helpers the reference solutions use (fold_in, chunk_bounds, ...:
a learner may use them too). tests/harness/test_graders.py checks that the list below is
what `scan()` finds in labs/, so it follows the course; your own helpers are never in it.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

from labs.harness import COURSE_ROOT

LESSONS_FUNCTIONS = {
    "algorithms": ("tree_reduce", "compare"),
    "batching": ("anatomy", "validation_errors", "unchecked_peer", "ungrouped_exchange",
                 "asymmetric_batch", "batch_on_gloo", "order_inside_batch", "fifo_same_pair",
                 "tags_out_of_order", "subgroup_peers", "demo"),
    "choices": ("duel", "_pairs", "_agree", "_decide", "model_for", "fit"),
    "collectives": ("run_builtin", "ring_shift", "shift_by_all_gather", "uneven_all_to_all",
                    "empty_batch"),
    "deadlocks": ("head_to_head", "ring_of_blocking_sends", "unmatched_recv", "tag_mismatch",
                  "mismatched_order", "send_to_self", "blocking_send_to_self", "_one_way",
                  "timeout_closes_pair", "exchange_blocking", "demo"),
    "gradients": ("average_gradients_all_reduce", "averaging_check"),
    "jobs": ("work_objects", "overlap_timing", "_p2p_serial", "_all_reduce_step", "demo"),
    "layouts": ("peer_outside_group", "global_for_group_rank", "cycle_across_groups",
                "cycle_fixed", "group_on_some_ranks", "groups_in_other_orders"),
    "p2p": ("first_send", "nonblocking_pair", "completion_on_gloo", "touch_before_wait",
            "read_before_wait", "rendezvous_send", "any_source", "demo"),
    "patterns": ("blocking_send_forward_recv_backward", "blocking_send_backward_recv_forward",
                 "parity_ordered_p2p", "ungrouped_send_forward_recv_backward",
                 "ungrouped_send_backward_recv_forward", "run_1f1b", "object_messages"),
    "playground": ("hello",),
    "ring": ("naive_all_reduce", "pass_along_all_reduce", "all_reduce_builtin",
             "compare_with_all_reduce", "sample_variants"),
    "snippets": ("snippet1_as_written", "snippet1_with_fixes", "dropped_send",
                 "ring_all_reduce_as_written", "same_buffer_slow_motion", "dropped_request",
                 "average_gradients_as_written", "average_gradients_with_fixes", "snippet3_run"),
    "waiting": ("barrier_is_not_wait", "reuse_after_recv_wait", "wait_twice", "racy_ring_shift",
                "overlap_timing", "ring_matmul"),
    "welcome": ("first_all_reduce", "head_to_head_send"),
}


def codes() -> list:
    """The code objects of those functions, as the lab modules define them now (a module
    that does not import, one you are editing, has nothing a body could call)."""
    found = []
    for module, names in LESSONS_FUNCTIONS.items():
        try:
            namespace = vars(importlib.import_module(f"labs.{module}"))
        except Exception:  # noqa: BLE001 - a syntax error in another lesson is not this grade's
            continue
        found += [inspect.unwrap(namespace[name]).__code__ for name in names
                  if inspect.isfunction(namespace.get(name))]
    return found


_COMMUNICATES = re.compile(
    r"\bdist\.(i?send|i?recv|batch_isend_irecv|P2POp|all_reduce|all_gather\w*|reduce_scatter\w*"
    r"|broadcast\w*|all_to_all\w*|reduce|gather|scatter|send_object_list|recv_object_list)\b")


def scan(root: Path = COURSE_ROOT) -> dict[str, tuple[str, ...]]:
    """What LESSONS_FUNCTIONS should be: every top-level function of labs/<lesson>.py that
    is not an exercise, calls torch.distributed to communicate, and is not imported by a
    reference solution."""
    used = set()
    for path in sorted((root / "solutions").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labs."):
                used |= {(node.module.split(".")[-1], alias.name) for alias in node.names}
    found: dict[str, tuple[str, ...]] = {}
    for path in sorted((root / "labs").glob("*.py")):
        module, source = path.stem, path.read_text()
        if module in ("__init__", "plans"):          # plans.py is forbidden as a whole
            continue
        names = tuple(
            node.name for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef) and (module, node.name) not in used
            and not any(getattr(d, "id", "") == "exercise" for d in node.decorator_list)
            and _COMMUNICATES.search(ast.get_source_segment(source, node)))
        if names:
            found[module] = names
    return found
