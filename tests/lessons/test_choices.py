"""best_all_reduce's saved choices (labs/choices.py): measured, kept in a file with the load
they were made under, confirmed on first use in a new process (measured again if the pick
loses); `calibrate` measures again; a corrupted, old or foreign file is ignored, saying so;
every rank takes rank 0's decision. The duel's statistics (labs/duel.py): its error rate on
simulated duels, under the stated bound. Each test uses its own file
(P2P_COURSE_BEST_CACHE), never the learner's .p2p-cache/best_all_reduce.json."""
import json
import math
import random
import time

import pytest
import torch

import labs.algorithms as lab
from labs import choices, duel, launch
from labs.bench import duel_error

KIB = 1 << 10


def _env(path):
    return {choices.CACHE_ENV: path}


def _entry(path, ranks, label):
    return json.loads(path.read_text())["ranks"][str(ranks)][label]


# ---- Workers ---------------------------------------------------------------------------

def decide_then_calibrate(rank, world_size, sizes, calibrate):
    """Decide at `sizes` (file or duel); then, if asked, calibrate them; the log of where
    every decision came from, and what runs."""
    first = lab.decide_sizes(rank, world_size, sizes)
    if calibrate:
        lab.calibrate(sizes)
    return first, list(choices.LOG), [choices.decided(world_size, n) for n in sizes]


def slowed(fn, seconds=0.02):
    """`fn`, made `seconds` slower per call: a call that surely loses a duel."""
    def slow(*args, **kwargs):
        time.sleep(seconds)
        return fn(*args, **kwargs)
    return slow


def decide_with_one_slowed(rank, world_size, sizes, which):
    """decide_sizes with gloo's all_reduce (`which` = "gloo") or the engine's algorithms
    ("pick") slowed down, in the duel and the confirmation: the log and what runs."""
    import torch.distributed as dist
    if which == "gloo":
        dist.all_reduce = slowed(dist.all_reduce)
    else:                               # the engine's algorithms, not gloo's (LIBRARY)
        run = choices.run_algorithm
        slow = slowed(run)
        choices.run_algorithm = lambda what, t: (run if what == lab.LIBRARY else slow)(what, t)
    first = lab.decide_sizes(rank, world_size, sizes)
    return first, list(choices.LOG), [choices.decided(world_size, n) for n in sizes]


def rank_files(rank, world_size, files):
    """Each rank reads its own file (`files[rank]`): what best_all_reduce runs at 4 KiB,
    gloo's all_reduce slowed down (the saved pick holds its confirmation)."""
    import os

    import torch.distributed as dist
    dist.all_reduce = slowed(dist.all_reduce)
    os.environ[choices.CACHE_ENV] = files[rank]
    tensor = torch.ones(KIB)
    lab.best_all_reduce(tensor)
    return choices.decided(world_size, 4 * KIB), tensor[0].item(), list(choices.LOG)


# ---- The file: saved, reused, measured again --------------------------------------------

def test_a_decision_is_saved_with_its_conditions_and_a_later_run_reuses_it(tmp_path):
    path = tmp_path / "choices.json"
    first = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                   timeout=120, quiet=True)
    assert first[0] == first[1]                          # every rank: the same decision
    (_, runs, source), = first[0][0]
    assert source == "measured" and path.exists()
    saved = path.read_text()
    entry = _entry(path, 2, "4 KiB")
    assert entry["runs"] == runs and entry["pairs"] >= choices.MIN_PAIRS
    assert entry["load"] >= 0 and all(mode in entry["wins"] for mode in duel.MODES)
    assert json.loads(saved)["machine"] == choices.machine()      # cores, torch, platform
    assert {"alpha", "beta", "gamma"} <= set(json.loads(saved)["ranks"]["2"]["model"])
    again = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                   timeout=120, quiet=True)
    (_, now, source), = again[0][0]
    if runs == lab.LIBRARY:                 # the default: used as it is, nothing measured
        assert (now, source, again[0][1]) == (runs, "saved", [(2, 4 * KIB, "saved")])
        assert path.read_text() == saved
    else:                                   # a pick: confirmed here, or measured again
        assert source in ("confirmed", "re-measured")
        assert (path.read_text() == saved) == (source == "confirmed")


def test_a_saved_pick_that_holds_is_confirmed_cheaply_and_the_file_kept(tmp_path):
    path = tmp_path / "choices.json"
    choices.save(path, 2, "4 KiB", {"runs": "doubling"})
    saved = path.read_text()
    t0 = time.perf_counter()
    res = launch(decide_with_one_slowed, 2, args=([4 * KIB], "gloo"), env=_env(path),
                 timeout=120, quiet=True)
    assert res[0] == res[1]
    first, log, now = res[0]
    assert first == [(4 * KIB, "doubling", "confirmed")] and now == ["doubling"]
    assert log == [(2, 4 * KIB, "confirmed")] and path.read_text() == saved
    # a few pairs: (1 warm-up + CONFIRM_PAIRS) x (BURST + 1) gloo calls of 20 ms, no duel
    assert time.perf_counter() - t0 < 30


def test_a_saved_pick_that_loses_its_confirmation_is_measured_again(tmp_path):
    path = tmp_path / "choices.json"
    choices.save(path, 2, "4 KiB", {"runs": "doubling"})
    res = launch(decide_with_one_slowed, 2, args=([4 * KIB], "pick"), env=_env(path),
                 timeout=180, quiet=True)
    assert res[0] == res[1]
    first, log, now = res[0]
    assert first == [(4 * KIB, lab.LIBRARY, "re-measured")] and now == [lab.LIBRARY]
    entry = _entry(path, 2, "4 KiB")          # the full duel, saved over the old verdict
    assert entry["runs"] == lab.LIBRARY and entry["pairs"] >= choices.MIN_PAIRS
    assert "surely not" in entry["why"] and entry["load"] >= 0


def test_calibrate_measures_again_and_saves_over_the_file(tmp_path):
    path = tmp_path / "choices.json"
    launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path), timeout=120,
           quiet=True)
    data = json.loads(path.read_text())
    data["ranks"]["2"]["4 KiB"]["runs"] = lab.LIBRARY    # as if the last duel said gloo
    data["ranks"]["2"]["4 KiB"]["pairs"] = 0
    path.write_text(json.dumps(data))
    res = launch(decide_then_calibrate, 2, args=([4 * KIB], True), env=_env(path),
                 timeout=120, quiet=True)
    first, log, now = res[0]
    assert first == [(4 * KIB, lab.LIBRARY, "saved")]
    assert log == [(2, 4 * KIB, "saved"), (2, 4 * KIB, "measured")]
    entry = _entry(path, 2, "4 KiB")
    assert entry["pairs"] >= choices.MIN_PAIRS and now == [entry["runs"]]
    assert res[1][2] == now                              # every rank runs the new decision


@pytest.mark.parametrize("damage, said", [
    (lambda d: "{not json", "unreadable"),
    (lambda d: json.dumps({**d, "format": 99}), "unreadable"),
    (lambda d: json.dumps({**d, "format": 1}), "made by an older duel"),
    (lambda d: json.dumps({**d, "machine": {**d["machine"], "cpus": 999, "torch": "1.0"}}),
     "measured on another machine (999 CPUs, torch 1.0"),
])
def test_a_corrupted_or_foreign_file_is_ignored_with_a_clear_message(tmp_path, capsys,
                                                                      damage, said):
    path = tmp_path / "choices.json"
    choices.save(path, 2, "4 KiB", {"runs": "ring"})     # a valid file first
    path.write_text(damage(json.loads(path.read_text())))
    data, note = choices.load(path)
    assert data == {"ranks": {}} and said in note and "measuring again" in note
    res = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                 timeout=120)
    printed = capsys.readouterr().out
    assert said in printed and printed.count("best_all_reduce: ignoring") == 1   # rank 0, once
    assert res[0][0][0][2] == "measured"                 # it ran the duel instead
    assert choices.load(path) == (json.loads(path.read_text()), None)    # replaced, valid


def test_every_rank_takes_rank_0s_decision(tmp_path):
    """Ranks whose files disagree still run one algorithm: rank 0's (read once, broadcast).
    Each rank deciding from its own file would deadlock or sum wrongly."""
    files = []
    for rank, what in enumerate(["doubling", "ring", lab.LIBRARY]):
        files.append(str(tmp_path / f"rank{rank}.json"))
        choices.save(files[-1], 3, "4 KiB", {"runs": what})
    res = launch(rank_files, 3, args=(files,), timeout=60, quiet=True)
    assert [(what, total) for what, total, _ in res] == [("doubling", 3.0)] * 3
    assert all(log == [(3, 4 * KIB, "confirmed")] for _, _, log in res)


def test_the_default_file_sits_in_a_folder_git_ignores(tmp_path, monkeypatch):
    monkeypatch.setattr(choices, "DEFAULT_CACHE", tmp_path / ".p2p-cache" / "best.json")
    choices.save(choices.DEFAULT_CACHE, 2, "1 KiB", {"runs": lab.LIBRARY})
    assert (tmp_path / ".p2p-cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert choices.shown(choices.DEFAULT_CACHE) == ".p2p-cache/best.json"
    assert choices.DEFAULT_CACHE.name == "best.json"
    monkeypatch.undo()
    assert choices.shown(choices.DEFAULT_CACHE) == ".p2p-cache/best_all_reduce.json"


def test_saving_keeps_the_other_entries_and_names_the_machine(tmp_path):
    path = tmp_path / "sub" / "choices.json"
    choices.save(path, 2, "4 KiB", {"runs": "doubling"})
    choices.save(path, 4, "1 MiB", {"runs": lab.LIBRARY})
    choices.save(path, 2, "4 KiB", {"runs": "ring"})
    data = json.loads(path.read_text())
    assert data["machine"] == choices.machine() and "delete this file" in data["what"]
    assert data["ranks"] == {"2": {"4 KiB": {"runs": "ring"}},
                             "4": {"1 MiB": {"runs": lab.LIBRARY}}}
    assert [p.name for p in path.parent.iterdir()] == ["choices.json"]   # no temp file left


# ---- The duel's statistics (labs/duel.py), on numbers made up to be clear or not --------

def _times(base, n, spread, rng, bursts=0):
    """n times around `base`, some of them a burst of load (a rank waited for a core)."""
    out = [base * (1 + spread * rng.random()) for _ in range(n)]
    for i in rng.sample(range(n), bursts):
        out[i] += base * rng.uniform(3, 10)
    return out


def _modes(pick, gloo, back_to_back=None):
    """Both modes: the same pairs in each unless `back_to_back` = (pick, gloo) is given."""
    bb = back_to_back or (pick, gloo)
    return {"back-to-back": duel.Pairs(*bb), "single": duel.Pairs(pick, gloo)}


def test_a_clear_win_in_both_modes_survives_bursts_of_load_and_a_small_one_goes_to_gloo():
    rng = random.Random(0)
    gloo = _times(1.0, 45, 0.2, rng, bursts=12)
    pick = _times(0.3, 45, 0.2, rng, bursts=12)
    v = choices.verdict(_modes(pick, gloo), "doubling", final=False)
    assert v.runs == "doubling" and v.single < 1 - choices.MARGIN and "1%" in v.why
    # 5% faster: not the MARGIN; out of pairs, gloo's all_reduce
    slower = [t * 0.95 for t in gloo]
    assert choices.verdict(_modes(slower, gloo), "doubling", final=True).runs == lab.LIBRARY
    # the same calls: gloo's, as soon as the pairs say the pick is surely not MARGIN faster
    v = choices.verdict(_modes(gloo, gloo), "ring", final=False)
    assert v.runs == lab.LIBRARY and "surely not" in v.why


def test_a_pick_must_win_back_to_back_and_single_calls_alike():
    rng = random.Random(2)
    gloo, pick = _times(1.0, 45, 0.1, rng), _times(0.5, 45, 0.1, rng)
    assert choices.verdict(_modes(pick, gloo), "doubling", final=True).runs == "doubling"
    # clear in single calls, slower back to back (its calls queue behind each other)
    v = choices.verdict(_modes(pick, gloo, (_times(1.3, 45, 0.1, rng), gloo)), "doubling",
                        final=True)
    assert v.runs == lab.LIBRARY and v.back_to_back > 1


def test_a_lower_quartile_win_with_a_slower_median_is_no_win():
    """The issue's challenger: faster in the calls no rank waited in, slower in the typical
    call (it waits for a core more often)."""
    rng = random.Random(3)
    gloo = _times(1.0, 45, 0.1, rng, bursts=12)
    pick = _times(0.75, 45, 0.1, rng, bursts=27)
    lq = sorted(pick)[11] / sorted(gloo)[11]
    v = choices.verdict(_modes(pick, gloo), "doubling", final=True)
    assert lq < 0.9 and v.single > 1 and v.runs == lab.LIBRARY


def test_too_few_pairs_or_too_much_noise_is_no_verdict_yet():
    rng = random.Random(1)
    gloo, pick = _times(1.0, 10, 0.2, rng), _times(0.3, 10, 0.2, rng)
    assert choices.verdict(_modes(pick, gloo), "doubling", final=False) is None  # < MIN_PAIRS
    # a pick faster only in its lucky pairs: bursts on most of its calls
    gloo = _times(1.0, 15, 0.1, rng)
    lucky = _times(0.5, 15, 0.1, rng, bursts=9)
    found = choices.verdict(_modes(lucky, gloo), "doubling", final=False)
    assert found is None or found.runs == lab.LIBRARY
    assert choices.verdict(_modes(lucky, gloo), "doubling", final=True).runs == lab.LIBRARY


def test_the_critical_count_is_the_binomial_tail_at_alpha_over_the_looks():
    assert duel.LOOKS == len(range(duel.MIN_PAIRS, duel.MAX_PAIRS + 1, duel.BATCH))
    level = duel.ALPHA / duel.LOOKS
    for n in range(duel.MIN_PAIRS, duel.MAX_PAIRS + 1):
        c = duel.critical(n)
        def tail(k):
            return sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n
        assert tail(c) <= level < tail(c - 1), n
    assert duel.critical(3) == 4                # too few pairs: no count is enough


def test_the_order_in_a_pair_is_drawn_per_pair_and_the_same_in_every_process():
    import os
    import subprocess
    import sys
    firsts = [duel.pick_first(i, m) for m in duel.MODES for i in range(200)]
    assert 160 < sum(firsts) < 240                  # both orders, about half each
    other = subprocess.run(                          # another process, another str hash seed
        [sys.executable, "-c", "from labs import duel; print([duel.pick_first(i, m) for m "
         "in duel.MODES for i in range(200)])"], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout.strip() == str(firsts)


def test_the_duels_false_win_rate_stays_under_its_stated_bound():
    """The REAL sequential duel (labs.duel.run, verdict) on simulated pairs, 300 duels per
    scenario (labs.bench.duel_error): identical algorithms, and a challenger faster in lower
    quartile but slower in median, are picked at most ALPHA of the time; a challenger twice
    as fast is picked in most duels."""
    rates = {r.scenario: r for r in duel_error.rates(300, seed=1)}
    for name in ("identical", "contended"):
        assert rates[name].wins <= duel.ALPHA * rates[name].duels, rates[name]
    shape = rates["contended"]
    assert shape.lower_quartile < 0.9 and shape.median > 1.1      # the case
    assert rates["faster"].wins >= 0.7 * rates["faster"].duels, rates["faster"]
    assert "1%" in duel.__doc__ and "ALPHA" in duel.__doc__


def test_size_classes_are_the_nearest_power_of_4_within_the_measured_range():
    assert [choices.size_class(n) for n in (0, 1, 1000, 1024, 2047, 2048, 4096, 6000,
                                            8191, 8192, 1 << 24, 1 << 30)] == \
        [1 << 10, 1 << 10, 1 << 10, 1 << 10, 1 << 10, 1 << 12, 1 << 12, 1 << 12, 1 << 12,
         1 << 14, 1 << 24, 1 << 24]
    assert choices.CLASSES == sorted({choices.size_class(n) for n in choices.CLASSES})


def test_the_machine_is_named_without_the_host():
    import socket
    m = choices.machine()
    assert set(m) == {"cpus", "torch", "platform", "backend"}
    assert socket.gethostname() not in json.dumps(m)


def test_a_file_that_cannot_be_written_costs_a_duel_not_the_run(tmp_path, capsys):
    (tmp_path / "plain").write_text("a file, not a folder")
    path = tmp_path / "plain" / "choices.json"
    res = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                 timeout=120)
    assert res[0][0] == res[1][0] and res[0][0][0][2] == "measured"
    assert "could not save to" in capsys.readouterr().out
