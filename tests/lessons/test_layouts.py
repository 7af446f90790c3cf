"""Lesson 13 (labs/layouts.py): the grid and its two numberings, what the notebook says about
a global rank used as a group rank, the layout's training against one process (and the world
average against it), the cross-group cycle and its fixed twin, and the step's calls by group."""
import pytest
import torch

import labs.layouts as lab
import labs.views.layouts as view
from labs import HangError, launch
from labs.harness.ranks.exercises import SOLUTIONS_ENV

REFERENCE = {SOLUTIONS_ENV: "pp_dp_step"}


def test_grid_is_row_major_stage_by_replica():
    places = launch(lab.groups_and_ranks, 6, args=(3,), quiet=True)
    assert [(p.stage, p.replica) for p in places] == [(s, j) for s in range(3) for j in range(2)]
    assert places[3].pp_ranks == (1, 3, 5) and places[3].dp_ranks == (2, 3)
    assert all(view.pipeline_group(p.rank, 6, 3) == list(p.pp_ranks) for p in places)


def test_a_global_rank_as_group_peer_agrees_raises_or_misdirects():
    one_pipeline = [r for r in launch(lab.global_for_group_rank, 3, args=(3,), quiet=True) if r]
    assert one_pipeline == ["rank 0: group_peer=1 -> global rank 1: the next stage (the numbers "
                            "happen to agree)"]
    six = [r for r in launch(lab.global_for_group_rank, 6, args=(3,), quiet=True) if r]
    assert six[1] == "rank 1: group_peer=2 -> global rank 5: NOT the next stage (global 3)"


@pytest.mark.parametrize("world_size, pp", [(2, 2), (4, 2), (6, 2), (6, 3), (8, 4)])
def test_layout_trains_one_process_weights(world_size, pp):
    results = launch(lab.train_layout, world_size, args=(pp,), quiet=True, env=REFERENCE)
    assert max(lab.compare_with_one_process(results, pp).values()) < 1e-6
    losses = lab.reference_training(pp, world_size // pp)["losses"]
    if world_size == pp:      # one replica: its loss is the whole batch's
        assert results[-1]["losses"] == pytest.approx(losses, rel=1e-6)


def test_world_average_is_wrong_and_raises_nothing():
    results = launch(lab.train_layout, 4, args=(2, 3, lab.world_average_step), quiet=True,
                     env=REFERENCE)
    assert max(lab.compare_with_one_process(results, 2).values()) > 1e-3


def test_cycle_across_two_groups_hangs_in_both_all_reduces_and_the_twin_completes():
    with pytest.raises(HangError) as info:
        launch(lab.cycle_across_groups, 2, timeout=4, quiet=True)
    assert "rank 0: blocked in all_reduce" in info.value.brief()
    assert "rank 1: blocked in all_reduce" in info.value.brief()
    assert list(launch(lab.cycle_fixed, 2, quiet=True)) == [4.0, 4.0]


def test_step_calls_by_group():
    traced = launch(lab.step_timeline, 4, args=(2,), quiet=True, env=REFERENCE)
    lines = view.calls_by_group(traced.trace, 4, 2).splitlines()
    assert lines[0] == "rank 0: isend to 2 [pp], irecv from 2 [pp], all_reduce [dp], all_reduce [dp]"
    assert lines[3] == "rank 3: irecv from 1 [pp], isend to 1 [pp], all_reduce [dp], all_reduce [dp]"
    assert "[other]" not in "\n".join(lines)


def test_reference_training_is_the_whole_batch():
    """dp replicas' micro-batches put together are the one process's batch."""
    x, _ = lab._whole_batch(2, 0, 0)
    assert torch.equal(x[:lab.BATCH], lab.micro_batch(0, 2, 0)[0])
    with pytest.raises(ValueError, match="must divide"):
        lab.make_mesh(4, 3)
