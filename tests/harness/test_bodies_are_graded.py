"""Every learner body in tests/graders/bodies/ is graded somewhere: named by the catalogue
(tests/harness/catalogue/), named by a test, or called by another body of its file. A body
nothing grades says nothing, and is where copies drift: this fails (no workers, seconds)
when one appears."""
import ast
import re
from pathlib import Path

from tests.course import ROOT
from tests.harness import catalogue

BODIES = ROOT / "tests" / "graders" / "bodies"
NOT_BODIES = {"copies.py", "_shared.py"}      # tools the bodies use, no body in them
# Found idle by this test when it came (issue 55), not yet run for their verdict: each leaves
# this list for its lesson's catalogue (or is deleted). The list may only shrink.
AWAITING_A_VERDICT = {
    "algorithms.red2:halving_wide_accumulator",
    "algorithms.red5:doubling_late_send_waits_control",
    "algorithms.red5:doubling_late_send_waits_handshake",
    "batching.red12_a:all_pairs_lengths_through_float32",
    "batching.red2:neighbours_one_buffer_two_rows",
    "batching.red5:neighbours_skip_empty",
    "collectives.red2:all_to_all_chain_of_ops",
    "collectives.red2:broadcast_into_temp",
    "deadlocks.red4:batched_wait_last",
    "deadlocks.red4:checked_blocking_data",
    "deadlocks.red4:checked_sorted_shape",
    "gradients.red2:a2a_futures",
    "gradients.red3:a2a_sum_in_float64",
    "gradients.red3:bucketed_bytes_as_float32",
    "gradients.red3:ring_avg_state_dict",
    "gradients.red5:bucketed_leftovers_sorted",
    "gradients.red9_late:a2a_flipped_wire",
    "jobs.red11_a:ring_job_validates_first",
    "p2p.red2:ping_pong_ns_clock",
    "p2p.red3:ping_pong_rank1_isend_waited_last",
    "patterns.red10:rotate_kv_future_waited",
    "patterns.red10:rotate_kv_waits_unseen",
    "patterns.red4:fwd_ungrouped",
    "patterns.red4:rotate_packed_when_same",
    "ring.red12_b:ar_pass_along_small",
    "ring.red12_b:fwd_delta_encoded",
    "ring.red2:ring_owner_plus_one",
    "ring.red2:ring_torch_chunk",
    "ring.red3:pipelined_one_at_a_time",
    "ring.red3:pipelined_one_at_a_time_pg",
    "ring.red5:ring_lazy_send_waits_control",
    "ring.red9_late:bucketed_plan_cached_per_model",
    "ring.red9_late:doubling_flipped_wire",
    "ring.red9_late:pipelined_forward_from_scratch",
    "ring.red9_late:ring_avg_kept_large_buffers",
    "ring.red9_late:ring_flipped_wire",
    "ring.red9_late:ring_logs_to_file",
    "ring.red9_late:rotate_waits_via_futures",
    "ring.report:ring_one_element_buffers",
    "scripts:halo_edges_ignored",
    "snippets.red2:fixed_average_in_place",
    "waiting.red10:exchange_coalescing_manager",
    "waiting.red10:shift_flush_denormal_left_on",
    "waiting.red10:shift_input_scratch_in_flight",
    "waiting.red10:shift_read_helper_other_file",
    "waiting.red10:shift_read_hidden_switch",
    "waiting.red10:shift_write_send_via_ctypes",
    "waiting.red10:shift_write_send_via_numpy",
    "waiting.red10:step_compute_first_hidden_switch",
    "waiting.red12_a:shift_remembers_last_result",
    "waiting.red12_a:shift_send_thread_not_joined",
    "waiting.red12_a:step_copy_by_constructor",
    "waiting.red2:step_isend_irecv_explicit_group",
    "waiting.red2:step_row_quarters",
}


def _module(path: Path) -> str:
    """"ring.red2" for bodies/ring/red2.py, "ring" for bodies/ring/__init__.py."""
    parts = list(path.relative_to(BODIES).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _used_in_its_file(tree: ast.Module) -> set[str]:
    """Every name the file's code reads: a body another body (or a table) calls is used."""
    used = set()
    for node in tree.body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name):
                used.add(inner.id)
    return used


def bodies() -> dict[str, str]:
    """'<lesson>.<round>:<function>' -> file:line, for every public function of every bodies
    module; a torchrun script (bodies/scripts/) is one body, named by its file."""
    found = {}
    for path in sorted(BODIES.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if path.name in NOT_BODIES:
            continue
        if path.parent.name == "scripts":
            found[f"scripts:{path.stem}"] = f"{where}:1"
            continue
        tree = ast.parse(path.read_text())
        used = _used_in_its_file(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and \
                    node.name not in used:
                found[f"{_module(path)}:{node.name}"] = f"{where}:{node.lineno}"
    return found


def _words_of_the_tests() -> set[str]:
    return {word for p in sorted((ROOT / "tests").rglob("*.py")) if BODIES not in p.parents
            for word in re.findall(r"\w+", p.read_text())}


def test_every_body_is_graded_by_the_catalogue_or_a_test():
    named = {body for _, _, body, *_ in catalogue.WRONG + catalogue.RIGHT}
    words = _words_of_the_tests()
    idle = [f"{where}: {body}" for body, where in bodies().items()
            if body not in named | AWAITING_A_VERDICT and body.split(":")[1] not in words]
    assert not idle, (
        "bodies that nothing grades: add each to its lesson's catalogue "
        "(tests/harness/catalogue/<lesson>.py: WRONG with what its failure says, or RIGHT) "
        "with the verdict it gets, or delete it if another body says the same:\n  "
        + "\n  ".join(idle))


def test_the_awaiting_list_only_shrinks():
    """A body catalogued (or deleted) leaves the list: it never names a graded body."""
    named = {body for _, _, body, *_ in catalogue.WRONG + catalogue.RIGHT}
    found = bodies()
    stale = sorted(b for b in AWAITING_A_VERDICT if b in named or b not in found)
    assert not stale, f"catalogued or gone: take them off AWAITING_A_VERDICT: {stale}"


def test_the_body_finder_sees_bodies():
    """A guard for the finder: known bodies are found, helpers and tools are not."""
    found = bodies()
    assert "ring:rs_all_reduce" in found and "scripts:halo_deep_once" in found
    assert not any(name.split(":")[1].startswith("_") for name in found)
    assert len(found) > 500
