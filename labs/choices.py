"""best_all_reduce's saved choices: measured per machine, kept in a file, confirmed on use.

As autotuners do (FFTW's wisdom, Triton's autotune cache), the duel between gloo's own
all_reduce and the model's pick runs once per (machine, world size, size class), and its
verdict is saved to a small JSON file the learner can read and delete:

    .p2p-cache/best_all_reduce.json      (at the top of the course; git ignores the folder)
    P2P_COURSE_BEST_CACHE=/some/file     another file (the tests use a temporary one)

The duel's rule and its error bound are labs/duel.py's (the typical call, back to back and
single, a pick must win both; a false win at most ALPHA = 1% over all its looks); here its
pairs are measured on the ranks, the slowest rank's time, and every rank takes rank 0's
decision (a broadcast): a rank that chose differently would wait forever in another
algorithm's messages.

A verdict kept in a file is a constant measured under the load of its day (saved with it:
`load`, next to the machine's CPU count and torch version). So a saved pick is confirmed
on first use in each new process (labs.duel.holds, CONFIRM_PAIRS pairs per mode): one that
holds is noted in LOG ("confirmed"); one that loses is measured again by a full duel, saved
over ("re-measured"). A saved "gloo's all_reduce" is used as it is: it is the default.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
import torch.distributed as dist

from labs.duel import (ALPHA, BATCH, BURST, CONFIRM_PAIRS, MARGIN, MAX_PAIRS,  # noqa: F401
                       MIN_PAIRS, MODES, Pairs, Verdict, holds, pick_first, verdict)
from labs.duel import run as sequential
from labs.harness.ranks import measure, tracing
from labs.plans import ALGORITHMS, LIBRARY, Model, choose_plan, run_algorithm

CACHE_ENV = "P2P_COURSE_BEST_CACHE"     # P2P_COURSE_*: launch forwards it to the workers
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".p2p-cache" / "best_all_reduce.json"
FORMAT = 2           # 1: verdicts on lower quartiles, a per-look interval; measured again
CLASSES = [1 << k for k in range(10, 25, 2)]      # 1 KiB, 4 KiB, ..., 16 MiB: powers of 4
OPTIONS = (LIBRARY, *ALGORITHMS)                  # what a decision can be, by index


def _where():
    """The file's name as this process's decisions are keyed by (read at every call: cheap)."""
    return os.environ.get(CACHE_ENV) or DEFAULT_CACHE


def cache_path() -> Path:
    return Path(_where())


def shown(path) -> str:
    """`path` as a message shows it: from the top of the course when inside it (a notebook
    shows no machine's own folders), else as it is."""
    path, top = Path(path).resolve(), DEFAULT_CACHE.parent.parent
    return str(path.relative_to(top)) if path.is_relative_to(top) else str(path)


def machine() -> dict:
    """What the saved times depend on, without the host's name: a copied course on the same
    kind of machine reuses them, another CPU count or torch or OS measures again."""
    return {"cpus": os.cpu_count(), "torch": torch.__version__.split("+")[0],
            "platform": platform.platform(), "backend": "gloo"}


def load_now() -> float:
    """The machine's 1-minute load average (runnable processes), -1 where the OS has none:
    the condition a verdict is measured under, saved with it."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else -1.0


def size_class(nbytes: int) -> int:
    """The power of 4 nearest to `nbytes` on a log scale, within CLASSES."""
    e = max(nbytes, 1).bit_length() - 1            # 2^e <= nbytes < 2^(e+1)
    return min(max(1 << (e + (e & 1)), CLASSES[0]), CLASSES[-1])


# ---- The file ------------------------------------------------------------------------

def load(path) -> tuple[dict, str | None]:
    """(the saved entries for this machine: {"ranks": {...}}, a note if the file was
    ignored). A missing file is no note: nothing was measured yet."""
    path = Path(path)
    if not path.exists():
        return {"ranks": {}}, None
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("format") == 1:
            return {"ranks": {}}, (f"best_all_reduce: ignoring {shown(path)}: made by an "
                                   f"older duel (lower quartiles, no correction for its "
                                   f"repeated looks); measuring again, the file will be "
                                   f"replaced")
        if data.get("format") != FORMAT or not isinstance(data.get("ranks"), dict):
            raise ValueError(f"not a format-{FORMAT} choices file")
    except (OSError, ValueError, AttributeError) as exc:
        return {"ranks": {}}, (f"best_all_reduce: ignoring {shown(path)}: unreadable ({exc}); "
                               f"measuring again, the file will be replaced")
    if data.get("machine") != machine():
        return {"ranks": {}}, (f"best_all_reduce: ignoring {shown(path)}: measured on another "
                               f"machine ({_describe(data.get('machine'))}; this one: "
                               f"{_describe(machine())}); measuring again, the file will be "
                               f"replaced")
    return data, None


def _describe(m) -> str:
    if not isinstance(m, dict):
        return "unknown"
    return f"{m.get('cpus')} CPUs, torch {m.get('torch')}, {m.get('platform')}"


def keep(path, ranks: int, key: str, value) -> None:
    """`save` on rank 0 during a run: a file that cannot be written costs the next run a
    duel, not this run its ranks (an exception on rank 0 alone would leave the others
    waiting in the next collective)."""
    try:
        save(path, ranks, key, value)
    except OSError as exc:
        print(f"best_all_reduce: could not save to {shown(path)} ({exc}); the choice holds "
              f"for this run only", flush=True)


def save(path, ranks: int, key: str, value) -> None:
    """Set ranks[str(ranks)][key] = value in the file, keeping what else it holds (for this
    machine), atomically: a reader never sees half a file."""
    path = Path(path)
    data, _ = load(path)
    data.update(format=FORMAT, machine=machine(),
                what="best_all_reduce's choices (labs/choices.py): delete this file, or "
                     "call labs.algorithms.calibrate(), to measure again")
    data["ranks"].setdefault(str(ranks), {})[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent == DEFAULT_CACHE.parent and not (path.parent / ".gitignore").exists():
        (path.parent / ".gitignore").write_text("# made by labs/choices.py\n*\n")
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


# ---- The duel on these ranks: pairs measured, rank 0's word (the statistics: labs.duel) ----

def duel(world_size: int, nbytes: int, model: Model) -> Verdict:
    """A collective: gloo's all_reduce against the model's pick on `nbytes`, BATCH pairs per
    mode at a time until labs.duel has a verdict. Every rank returns rank 0's verdict,
    with the machine's load at the time."""
    work = torch.zeros(max(1, nbytes // 4))         # zeros: the sums stay zeros
    challenger = choose_plan(world_size, work.nbytes, model)
    pick = functools.partial(run_algorithm, challenger, work)
    gloo = functools.partial(dist.all_reduce, work)

    def settle(found):
        # every rank computes the same `found` from the same slowest-rank times; rank 0's
        # word still decides, so that no rounding can split the ranks (a rank in another
        # algorithm would wait forever in its messages): a flag, then the verdict once
        stop = torch.tensor([found is not None], dtype=torch.int64)
        dist.broadcast(stop, 0)
        return (True, _agree(found and replace(found, load=load_now()))) if stop.item() \
            else (False, None)

    kept, tracing.TRACER.events = tracing.TRACER.events, []  # the caller's trace survives
    try:
        _pairs(pick, gloo, -2, 2)                               # warm-up: not kept
        return sequential(lambda n: _pairs(pick, gloo, n, BATCH), challenger, settle)
    finally:
        tracing.TRACER.events = kept


def _timed(call, calls: int) -> float:
    """Seconds per call of `calls` calls back to back, started after a barrier."""
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) / calls


def _pairs(pick, gloo, first: int, count: int) -> dict:
    """Pairs `first`..`first + count - 1` of each mode: {mode: Pairs}, the slowest rank's
    times (the same on every rank); the order of each pair from labs.duel.pick_first, so
    that neither call always runs right after the other's messages."""
    local = []
    for i in range(first, first + count):
        for mode in MODES:
            calls = BURST if mode == "back-to-back" else 1
            order = (pick, gloo) if pick_first(i, mode) else (gloo, pick)
            took = {id(c): _timed(c, calls) for c in order}
            local += [took[id(pick)], took[id(gloo)]]
    slowest = torch.tensor(local, dtype=torch.float64).view(count, len(MODES), 2)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return {m: Pairs(slowest[:, k, 0].tolist(), slowest[:, k, 1].tolist())
            for k, m in enumerate(MODES)}


def _agree(value):
    """Rank 0's `value` on every rank (one broadcast of the object)."""
    box = [value]
    dist.broadcast_object_list(box, 0)
    return box[0]


def confirm(world_size: int, nbytes: int, runs: str) -> bool:
    """A collective: a saved pick against gloo's all_reduce (run_algorithm's LIBRARY) again,
    CONFIRM_PAIRS pairs per mode, labs.duel.holds; rank 0's word. Cheap next to a duel."""
    work = torch.zeros(max(1, nbytes // 4))
    pick = functools.partial(run_algorithm, runs, work)
    gloo = functools.partial(run_algorithm, LIBRARY, work)
    kept, tracing.TRACER.events = tracing.TRACER.events, []
    try:
        _pairs(pick, gloo, -1, 1)                               # warm-up: not kept
        return bool(_agree(holds(_pairs(pick, gloo, 0, CONFIRM_PAIRS))))
    finally:
        tracing.TRACER.events = kept


# ---- The decisions: in memory, in the file, or measured now -------------------------------

_DECIDED: dict = {}     # (file, world size, class) -> what runs; only ever added collectively,
LOG: list = []          # so it is the same on every rank. LOG: (world size, class, source)
_NOTED: set = set()


def decided(world_size: int, nbytes: int) -> str:
    """What best_all_reduce runs for `nbytes` on `world_size` ranks: a dictionary look-up
    once known; the first time, a collective (every rank calls it with the same size, as
    every rank calls the all-reduce): rank 0 reads the file, else the duel runs now."""
    path = _where()
    key = (path, world_size, size_class(nbytes))
    got = _DECIDED.get(key)
    if got is None:
        got = _DECIDED[key] = _decide(world_size, key[2], Path(path))
    return got


def _decide(world_size, cls, path):
    """Rank 0 reads the file; gloo's all_reduce saved: used as it is; a pick saved: confirmed
    here first (a few pairs), measured again if it loses; nothing saved: the duel, now."""
    entry = _saved(path).get(str(world_size), {}).get(label(cls)) \
        if dist.get_rank() == 0 else None
    code = torch.tensor([OPTIONS.index(entry["runs"]) if _valid(entry) else -1])
    dist.broadcast(code, 0)
    saved = OPTIONS[code.item()] if code.item() >= 0 else None
    if saved == LIBRARY:
        LOG.append((world_size, cls, "saved"))
        return saved
    if saved is not None and confirm(world_size, cls, saved):
        LOG.append((world_size, cls, "confirmed"))
        return saved
    found = duel(world_size, cls, model_for(world_size, path))
    if dist.get_rank() == 0:
        keep(path, world_size, label(cls), asdict(found))
    LOG.append((world_size, cls, "re-measured" if saved else "measured"))
    return found.runs


def label(cls: int) -> str:
    return measure.format_size(cls)


def _valid(entry) -> bool:
    return isinstance(entry, dict) and entry.get("runs") in OPTIONS


def _saved(path) -> dict:
    """Rank 0: this machine's entries in `path`; says once per file why it ignores one."""
    data, note = load(path)
    if note and str(path) not in _NOTED:
        _NOTED.add(str(path))
        print(note, flush=True)
    return data["ranks"]


def model_for(world_size, path, refit=False) -> Model:
    """The model that names the duel's challenger: saved with the choices, or fitted now
    (a collective; rank 0's fit on every rank) and saved."""
    saved = _saved(path).get(str(world_size), {}).get("model") \
        if dist.get_rank() == 0 and not refit else None
    have = isinstance(saved, dict) and {"alpha", "beta", "gamma"} <= set(saved)
    box = torch.tensor([float(have), *([saved[k] for k in ("alpha", "beta", "gamma")]
                                       if have else [0.0] * 3)], dtype=torch.float64)
    dist.broadcast(box, 0)
    if box[0].item():
        return Model(*box[1:].tolist())
    model = fit()
    if dist.get_rank() == 0:
        keep(path, world_size, "model", {"alpha": model.alpha, "beta": model.beta,
                                         "gamma": model.gamma})
    return model


def fit(sizes=CLASSES, reps=5) -> Model:
    """Fit the Model here; a collective: every rank gets rank 0's fit.
    alpha, beta: lesson 05's ping-pong and fit, per size the faster of two runs (a burst of
    load hits one, rarely both); gamma: the fastest of 5 additions of 16 MiB tensors (load
    only ever makes one slower), the largest over the ranks."""
    rank, p = dist.get_rank(), dist.get_world_size()
    kept, tracing.TRACER.events = tracing.TRACER.events, []   # ping_pong clears the trace
    try:
        runs = [measure.ping_pong(rank, p, sizes, reps) for _ in range(2)]
    finally:
        tracing.TRACER.events = kept
    a, b, adds = torch.zeros(4 << 20), torch.ones(4 << 20), []
    for _ in range(6):
        t0 = time.perf_counter()
        a.add_(b)
        adds.append(time.perf_counter() - t0)
    gamma = min(adds[1:]) / a.nbytes    # the first add pays the page faults; load only adds
    fitted = measure.fit_alpha_beta(sizes, [min(r[n] for r in runs) for n in sizes]) \
        if rank == 0 else (0.0, 0.0)
    box = torch.tensor([*fitted, gamma], dtype=torch.float64)
    dist.broadcast(box[:2], 0)
    dist.all_reduce(box[2:], op=dist.ReduceOp.MAX)
    return Model(*box.tolist())


def calibrate(sizes=CLASSES) -> dict:
    """Measure again, now: the model and the duel at the class of every size, on these
    ranks; saved over what the file held. A collective. Returns {class: Verdict}."""
    p, where = dist.get_world_size(), _where()
    path = Path(where)
    model, out = model_for(p, path, refit=True), {}
    for cls in sorted({size_class(n) for n in sizes}):
        out[cls] = found = duel(p, cls, model)
        if dist.get_rank() == 0:
            keep(path, p, label(cls), asdict(found))
        _DECIDED[(where, p, cls)] = found.runs
        LOG.append((p, cls, "measured"))
    return out


def set_choices(world_size: int, runs: dict) -> None:
    """Decide without measuring, in this process only ({nbytes: what runs}): for tests and
    demos. Call it the same on every rank."""
    path = _where()
    for nbytes, what in runs.items():
        _DECIDED[(path, world_size, size_class(nbytes))] = what


def forget() -> None:
    """Drop what this process remembers (not the file): the next call reads the file."""
    _DECIDED.clear()
    _NOTED.clear()
