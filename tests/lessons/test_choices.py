"""best_all_reduce's saved choices (labs/choices.py): measured once, kept in a file, reused;
`calibrate` measures again; a corrupted or foreign file is ignored, saying so; every rank
takes rank 0's decision. Each test uses its own file (P2P_COURSE_BEST_CACHE), never the
learner's .p2p-cache/best_all_reduce.json."""
import json
import random

import pytest
import torch

import labs.algorithms as lab
from labs import choices, launch

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


def rank_files(rank, world_size, files):
    """Each rank reads its own file (`files[rank]`): what best_all_reduce runs at 4 KiB."""
    import os
    os.environ[choices.CACHE_ENV] = files[rank]
    tensor = torch.ones(KIB)
    lab.best_all_reduce(tensor)
    return choices.decided(world_size, 4 * KIB), tensor[0].item(), list(choices.LOG)


# ---- The file: saved, reused, measured again --------------------------------------------

def test_a_decision_is_saved_and_a_later_run_reuses_it_without_measuring(tmp_path):
    path = tmp_path / "choices.json"
    first = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                   timeout=120, quiet=True)
    assert first[0] == first[1]                          # every rank: the same decision
    (_, runs, source), = first[0][0]
    assert source == "measured" and path.exists()
    saved = path.read_text()
    entry = _entry(path, 2, "4 KiB")
    assert entry["runs"] == runs and entry["pairs"] >= choices.MIN_PAIRS
    assert {"alpha", "beta", "gamma"} <= set(json.loads(saved)["ranks"]["2"]["model"])
    again = launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path),
                   timeout=60, quiet=True)
    assert again[0][0] == [(4 * KIB, runs, "saved")]
    assert again[0][1] == [(2, 4 * KIB, "saved")]        # no duel ran
    assert path.read_text() == saved                     # and nothing was rewritten


def test_calibrate_measures_again_and_saves_over_the_file(tmp_path):
    path = tmp_path / "choices.json"
    launch(decide_then_calibrate, 2, args=([4 * KIB], False), env=_env(path), timeout=120,
           quiet=True)
    data = json.loads(path.read_text())
    data["ranks"]["2"]["4 KiB"]["runs"] = "ring"         # as if the last duel said ring
    data["ranks"]["2"]["4 KiB"]["pairs"] = 0
    path.write_text(json.dumps(data))
    res = launch(decide_then_calibrate, 2, args=([4 * KIB], True), env=_env(path),
                 timeout=120, quiet=True)
    first, log, now = res[0]
    assert first == [(4 * KIB, "ring", "saved")]
    assert log == [(2, 4 * KIB, "saved"), (2, 4 * KIB, "measured")]
    entry = _entry(path, 2, "4 KiB")
    assert entry["pairs"] >= choices.MIN_PAIRS and now == [entry["runs"]]
    assert res[1][2] == now                              # every rank runs the new decision


@pytest.mark.parametrize("damage, said", [
    (lambda d: "{not json", "unreadable"),
    (lambda d: json.dumps({**d, "format": 99}), "unreadable"),
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
    assert all(log == [(3, 4 * KIB, "saved")] for _, _, log in res)


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


# ---- The duel's statistics, on numbers made up to be clear or not -----------------------

def _times(base, n, spread, rng, bursts=0):
    """n times around `base`, some of them a burst of load (a rank waited for a core)."""
    out = [base * (1 + spread * rng.random()) for _ in range(n)]
    for i in rng.sample(range(n), bursts):
        out[i] += base * rng.uniform(3, 10)
    return out


def test_a_clear_win_survives_bursts_of_load_and_a_small_one_goes_to_the_library():
    rng = random.Random(0)
    gloo = _times(1.0, 15, 0.2, rng, bursts=4)
    pick = _times(0.3, 15, 0.2, rng, bursts=4)
    v = choices.verdict(pick, gloo, "doubling", final=False)
    assert v.runs == "doubling" and v.ratio_high < 1 - choices.MARGIN
    # 5% faster: not the MARGIN; sure of it, or out of pairs: gloo's all_reduce
    pick = [t * 0.95 for t in gloo]
    assert choices.verdict(pick, gloo, "doubling", final=True).runs == lab.LIBRARY
    # the same calls: gloo's, as soon as the interval lies above 1 - MARGIN
    v = choices.verdict(gloo, gloo, "ring", final=False)
    assert v.runs == lab.LIBRARY and "surely not" in v.why


def test_too_few_pairs_or_too_much_noise_is_no_verdict_yet():
    rng = random.Random(1)
    gloo, pick = _times(1.0, 10, 0.2, rng), _times(0.3, 10, 0.2, rng)
    assert choices.verdict(pick, gloo, "doubling", final=False) is None   # < MIN_PAIRS
    # a pick faster only in its lucky pairs: bursts on most of its calls
    gloo = _times(1.0, 15, 0.1, rng)
    lucky = _times(0.5, 15, 0.1, rng, bursts=9)
    found = choices.verdict(lucky, gloo, "doubling", final=False)
    assert found is None or found.runs == lab.LIBRARY
    assert choices.verdict(lucky, gloo, "doubling", final=True).runs == lab.LIBRARY


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
