"""Lesson 13's claims: groups and ranks in a (pp, dp) DeviceMesh, the pipeline x data-parallel
step against one process, and the rules of a layout (every group made by every rank in one
order; one order of calls across groups). Workers come from labs.layouts."""
import labs.layouts as lesson
from labs import launch
from labs.claims.common import HANG, Ended, attempt, once
from labs.claims.registry import ClaimResult, claim, nccl_claim
from labs.harness.ranks.exercises import SOLUTIONS_ENV



def _quietly(fn, world_size, args=()):
    """A quiet launch; pp_dp_step is the reference's (the ledger checks torch, not you)."""
    return launch(fn, world_size, args=args, quiet=True, env={SOLUTIONS_ENV: "pp_dp_step"})


@once
def _outside():
    return _quietly(lesson.peer_outside_group, 4)


@claim("13", "a peer outside the group raises ValueError at the call (P2POp, isend, "
             "get_group_rank: 'Global rank r is not part of group'; a group_peer past the "
             "group's end: 'Group rank g is not part of group')")
def peer_outside_group_raises():
    results = _outside()
    holds = all(r["P2POp(peer=outside)"] == f"ValueError: Global rank {r['outside']} is not "
                                             f"part of group" and
                r["isend(dst=outside)"] == r["P2POp(peer=outside)"] and
                r["get_group_rank(outside)"] == r["P2POp(peer=outside)"] and
                r["P2POp(group_peer=2)"] == "ValueError: Group rank 2 is not part of group"
                for r in results)
    return ClaimResult(holds, f"rank 0, pp group [0, 2]: {results[0]['P2POp(peer=outside)']}; "
                              f"group_peer=2: {results[0]['P2POp(group_peer=2)']}")


@once
def _coincidence():
    return {ws: [r for r in _quietly(lesson.global_for_group_rank, ws, (pp,)) if r]
            for ws, pp in ((2, 2), (4, 2), (6, 3))}


@claim("13", "a global rank passed as group_peer is right only where both numberings agree "
             "(one pipeline); with replicas it raises on one rank and names another member, "
             "silently, on another")
def global_rank_as_group_peer_agrees_by_coincidence():
    seen = _coincidence()
    holds = ("the numbers happen to agree" in seen[2][0] and
             "not part of group" in seen[4][1] and "NOT the next stage" in seen[6][1])
    return ClaimResult(holds, f"pp=2 x dp=1: {seen[2][0]}; pp=2 x dp=2: {seen[4][1]}; "
                              f"pp=3 x dp=2: {seen[6][1]}")


@claim("13", "the pipeline x data-parallel step (2 x 2 and 3 x 2 ranks) trains the same weights "
             "as one process on the whole model and batch, to float32 rounding")
def pp_dp_training_equals_one_process():
    diffs = {f"{pp} x {ws // pp}": max(lesson.compare_with_one_process(
        _quietly(lesson.train_layout, ws, (pp,)), pp).values())
        for ws, pp in ((4, 2), (6, 3))}
    holds = all(d < 1e-6 for d in diffs.values())
    return ClaimResult(holds, "; ".join(f"{k}: max |difference| < 1e-6: {d < 1e-6}"
                                        for k, d in diffs.items()))


@claim("13", "averaging the gradients over the world instead of the dp group raises nothing "
             "(every stage's weights have the same shapes) and trains other weights")
def world_average_is_silently_wrong():
    results = _quietly(lesson.train_layout, 4, (2, 3, lesson.world_average_step))
    diff = max(lesson.compare_with_one_process(results, 2).values())
    return ClaimResult(diff > 1e-3, f"no error; max |difference| from one process > 1e-3: "
                                    f"{diff > 1e-3}")


def _hangs(fn, world_size, timeout=HANG["timeout"]):
    """Did the launch never complete: stopped as a hang, or ended by a timeout in a rank
    (gloo's, or the store's while a group was being made: which one comes first is timing)."""
    outcome = attempt(fn, world_size, timeout=timeout, pg_timeout=HANG["pg_timeout"])
    timed_out = outcome.kind == Ended.ERROR and any(
        words in outcome.brief for words in ("Timed out", "timeout", "Connection closed"))
    return outcome.kind == Ended.HANG or timed_out, outcome.brief.split("; posted")[0]


@claim("13", "two ranks that call two groups' all_reduce in opposite orders hang on gloo (each "
             "group has its own context); the same calls in one order complete")
def cycle_across_groups_hangs():
    hung, brief = _hangs(lesson.cycle_across_groups, 2, timeout=4)   # stopped by the deadline
    fixed = attempt(lesson.cycle_fixed, 2, **HANG)
    ok = fixed.kind == Ended.RETURNED and list(fixed.results) == [4.0, 4.0]
    both = brief.count("blocked in all_reduce") == 2
    return ClaimResult(hung and both and ok, f"opposite orders: each rank blocked in an "
                                             f"all_reduce, stopped at the deadline: {both}; "
                                             f"one order: returned "
                                             f"{list(fixed.results) if ok else fixed.kind}")


@claim("13", "a group made on some ranks only, or groups made in other orders, hangs a later "
             "collective on gloo")
def groups_made_unevenly_hang():
    skipped, _ = _hangs(lesson.group_on_some_ranks, 3)
    reordered, _ = _hangs(lesson.groups_in_other_orders, 3)
    # (where each rank sat depends on timing: still making a group, or in the collective)
    return ClaimResult(skipped and reordered, f"rank 2 skipped new_group([0, 1]), then "
                                              f"new_group([1, 2]): hang {skipped}; groups made "
                                              f"in other orders: hang {reordered}")

nccl_claim(
    "nccl_groups_in_one_order_on_every_rank", "13",
    "on NCCL each process group is its own communicator with its own stream; operations that "
    "ranks issue on different communicators in different orders can deadlock, so every rank "
    "must issue them in one order",
    "torch 2.13 distributed_c10d.py new_group docstring ('Safe concurrent usage': the user must "
    "ensure a globally consistent execution order of collectives across ranks); NCCL user "
    "guide, 'Using multiple NCCL communicators concurrently' (docs.nvidia.com/deeplearning/"
    "nccl/user-guide/docs/usage/communicators.html)")

