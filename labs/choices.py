"""best_all_reduce's saved choices: measured once per machine, kept in a file, reused.

As autotuners do (FFTW's wisdom, Triton's autotune cache), the duel between gloo's own
all_reduce and the model's pick runs once per (machine, world size, size class), and its
verdict is saved to a small JSON file the learner can read and delete:

    .p2p-cache/best_all_reduce.json      (at the top of the course; git ignores the folder)
    P2P_COURSE_BEST_CACHE=/some/file     another file (the tests use a temporary one)

A duel is a sequence of interleaved pairs (the two calls back to back after a barrier, the
slowest rank's time), BATCH at a time, until the verdict is certain: the ratio of the two
lower quartiles lies, at CONFIDENCE (pairs resampled), wholly MARGIN below 1 (the pick
wins), or wholly above 1 - MARGIN (gloo's all_reduce). No verdict after MAX_PAIRS: gloo's
all_reduce, the default whenever the evidence is not there. Every rank takes rank 0's
decision (a broadcast): a rank that chose differently would wait forever in another
algorithm's messages.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from labs.harness.ranks import measure, tracing
from labs.plans import ALGORITHMS, LIBRARY, Model, choose_plan, run_algorithm

CACHE_ENV = "P2P_COURSE_BEST_CACHE"     # P2P_COURSE_*: launch forwards it to the workers
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".p2p-cache" / "best_all_reduce.json"
FORMAT = 1
CLASSES = [1 << k for k in range(10, 25, 2)]      # 1 KiB, 4 KiB, ..., 16 MiB: powers of 4
OPTIONS = (LIBRARY, *ALGORITHMS)                  # what a decision can be, by index

BATCH = 5            # pairs per look at the evidence
MIN_PAIRS = 15       # no verdict on fewer
MAX_PAIRS = 45       # then gloo's all_reduce, for want of evidence
MARGIN = 0.10        # the pick must be at least 10% faster in the typical pair
CONFIDENCE = 0.99    # two-sided, per look


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


# ---- The duel's statistics -------------------------------------------------------------

def lower_quartile(times) -> float:
    """The calls that did not wait for a CPU core: on a loaded machine a call's time jumps
    by milliseconds whenever one of its ranks waits, and the median may land on the jump."""
    s = sorted(times)
    return s[(len(s) - 1) // 4]


def bounds(pick: list, gloo: list, resamples=2000) -> tuple[float, float]:
    """A CONFIDENCE interval of lower_quartile(pick) / lower_quartile(gloo): the pairs
    resampled with replacement (a pair stays a pair: the two calls shared the moment). A
    fixed seed: the same data gives the same interval on every rank and every run."""
    n = len(pick)
    rows = torch.randint(n, (resamples, n), generator=torch.Generator().manual_seed(0))
    k = (n - 1) // 4 + 1
    lq = [torch.tensor(t, dtype=torch.float64)[rows].kthvalue(k, dim=1).values
          for t in (pick, gloo)]
    tail = (1 - CONFIDENCE) / 2
    ratios = lq[0] / lq[1]
    return ratios.quantile(tail).item(), ratios.quantile(1 - tail).item()


@dataclass(frozen=True)
class Verdict:
    """One duel's outcome, as saved: what best_all_reduce runs at this size class."""

    runs: str                 # LIBRARY or one of ALGORITHMS
    challenger: str           # the model's pick that faced gloo
    pairs: int
    ratio: float              # lower quartiles, challenger / gloo (< 1: challenger faster)
    ratio_low: float          # its CONFIDENCE interval
    ratio_high: float
    gloo_ms: float            # lower quartiles
    challenger_ms: float
    why: str


def verdict(pick: list, gloo: list, challenger: str, final: bool) -> Verdict | None:
    """The verdict the pairs so far support, or None (measure more). The challenger wins
    if the whole interval of its lower quartile over gloo's lies MARGIN below 1 and it was
    faster in most pairs; gloo, if the interval lies above 1 - MARGIN. `final`: no more
    pairs will come, so no verdict yet means gloo's all_reduce, the default."""
    n = len(pick)
    lq_pick, lq_gloo = lower_quartile(pick), lower_quartile(gloo)
    low, high = bounds(pick, gloo)
    stats = dict(challenger=challenger, pairs=n, ratio=lq_pick / lq_gloo, ratio_low=low,
                 ratio_high=high, gloo_ms=lq_gloo * 1e3, challenger_ms=lq_pick * 1e3)
    wins = sum(p < g for p, g in zip(pick, gloo))
    if n >= MIN_PAIRS and high < 1 - MARGIN and 2 * wins > n:
        return Verdict(challenger, why=f"{challenger} faster by more than {MARGIN:.0%}, "
                       f"{CONFIDENCE:.0%} interval {low:.2f}-{high:.2f}", **stats)
    if n >= MIN_PAIRS and low > 1 - MARGIN:
        return Verdict(LIBRARY, why=f"{challenger} surely not {MARGIN:.0%} faster, "
                       f"{CONFIDENCE:.0%} interval {low:.2f}-{high:.2f}", **stats)
    if final:
        return Verdict(LIBRARY, why=f"no verdict after {n} pairs (interval {low:.2f}-"
                       f"{high:.2f}): the library by default", **stats)
    return None


def duel(world_size: int, nbytes: int, model: Model) -> Verdict:
    """A collective: gloo's all_reduce against the model's pick on `nbytes`, in interleaved
    pairs until `verdict` has one. Every rank returns rank 0's verdict."""
    work = torch.zeros(max(1, nbytes // 4))         # zeros: the sums stay zeros
    challenger = choose_plan(world_size, work.nbytes, model)
    calls = {LIBRARY: functools.partial(dist.all_reduce, work),
             challenger: functools.partial(run_algorithm, challenger, work)}
    pick, gloo = [], []
    kept, tracing.TRACER.events = tracing.TRACER.events, []  # the caller's trace survives
    try:
        return _pairs(calls, challenger, pick, gloo)
    finally:
        tracing.TRACER.events = kept


def _pairs(calls, challenger, pick, gloo):
    while True:
        times = measure.time_on_ranks(calls, BATCH, warmup=0 if pick else 2)
        pick += times[challenger]
        gloo += times[LIBRARY]
        found = verdict(pick, gloo, challenger, final=len(pick) >= MAX_PAIRS)
        # the slowest rank's times are the same on every rank, and so is `found`; rank 0's
        # word still decides, so that no rounding anywhere can split the ranks
        stop = torch.tensor([found is not None], dtype=torch.int64)
        dist.broadcast(stop, 0)
        if stop.item():
            return _agree(found)


def _agree(found):
    """Rank 0's verdict on every rank (its fields, one broadcast)."""
    box = [asdict(found) if found is not None else None]
    dist.broadcast_object_list(box, 0)
    return Verdict(**box[0])


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
    entry = _saved(path).get(str(world_size), {}).get(label(cls)) \
        if dist.get_rank() == 0 else None
    code = torch.tensor([OPTIONS.index(entry["runs"]) if _valid(entry) else -1])
    dist.broadcast(code, 0)
    if code.item() >= 0:
        LOG.append((world_size, cls, "saved"))
        return OPTIONS[code.item()]
    found = duel(world_size, cls, model_for(world_size, path))
    if dist.get_rank() == 0:
        keep(path, world_size, label(cls), asdict(found))
    LOG.append((world_size, cls, "measured"))
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
