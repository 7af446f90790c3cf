"""The duel's statistics: when is the model's pick faster than gloo's own all_reduce?

No process group here: the same rule decides on real workers (labs/choices.py measures the
pairs) and in the simulation that measures its error rate (`python -m labs.bench duel_error`).

What is compared. The typical call, as a training step makes it, in two MODES: BURST calls
back to back between two barriers (as DDP's gradient buckets are reduced one after the other)
and a single call after a barrier. A pair is one time of each algorithm in one mode, taken one
right after the other, in an order drawn per pair (seeded by the pair's index, so every rank
draws the same): neither always runs right after the other's messages. A lower quartile would
compare only the calls that waited for no CPU core; the median keeps the waits a job pays.

The test, per mode (a sign test, exact, with no assumption on how the times are distributed):
in a pair the pick "wins by the margin" when its time is below (1 - MARGIN) x gloo's. If the
pick is NOT MARGIN faster in a typical pair of that mode (the median of pick / gloo over pairs
is >= 1 - MARGIN), such wins come with probability <= 1/2 per pair, and the number of wins in
n pairs is at most Binomial(n, 1/2). The pick wins a look if, in both modes, its wins reach
`critical(n)`, the smallest count with P(Binomial(n, 1/2) >= count) <= ALPHA / LOOKS, AND
its median is MARGIN below gloo's median. The duel looks after every BATCH pairs from
MIN_PAIRS to MAX_PAIRS: at most LOOKS looks. A false win needs one look's test to reject where
its hypothesis holds; the union over the looks (Bonferroni) bounds that by LOOKS x ALPHA /
LOOKS = ALPHA:

    P(a pick that is not MARGIN faster in the typical pair of both modes wins) <= ALPHA = 1%,

provided the pairs are independent (a load that drifts slowly makes neighbouring pairs alike;
the random order protects against a bias of position, not against that). Gloo's all_reduce
wins early where, in either mode, the pairs where the pick is NOT MARGIN faster reach the same
count; after MAX_PAIRS with no verdict, gloo's all_reduce: the default without the evidence.
"""
from __future__ import annotations

import functools
import math
import random
import statistics
from dataclasses import dataclass, field

from labs.plans import LIBRARY

MODES = ("back-to-back", "single")
BURST = 4            # calls per back-to-back time (the time kept: per call)
BATCH = 5            # pairs per mode between two looks at the evidence
MIN_PAIRS = 15       # no verdict on fewer
MAX_PAIRS = 45       # then gloo's all_reduce, for want of evidence
LOOKS = len(range(MIN_PAIRS, MAX_PAIRS + 1, BATCH))     # 7: at 15, 20, ..., 45 pairs
MARGIN = 0.10        # the pick must be at least 10% faster in the typical call
ALPHA = 0.01         # the bound on a false win, over all the looks
CONFIRM_PAIRS = 5    # per mode, when a saved pick is used in a new process


def pick_first(pair: int, mode: str) -> bool:
    """Whether the pick runs first in pair `pair` of `mode`: a coin seeded by both (a str
    seed is hashed the same way in every process), so every rank draws the same."""
    return random.Random(f"{mode}:{pair}").random() < 0.5


@functools.lru_cache(maxsize=None)
def critical(n: int, level: float = ALPHA / LOOKS) -> int:
    """The smallest count c with P(Binomial(n, 1/2) >= c) <= level (n + 1: none)."""
    tail = 0
    for c in range(n, -1, -1):
        tail += math.comb(n, c)
        if tail / 2 ** n > level:
            return c + 1
    return 0


@dataclass
class Pairs:
    """One mode's pairs so far: the pick's and gloo's time in each (the slowest rank's)."""

    pick: list = field(default_factory=list)
    gloo: list = field(default_factory=list)

    def wins(self) -> int:
        """Pairs where the pick took less than (1 - MARGIN) x gloo's time."""
        return sum(p < (1 - MARGIN) * g for p, g in zip(self.pick, self.gloo))

    def ratio(self) -> float:
        """Medians, pick / gloo (< 1: the pick's typical call is faster)."""
        return statistics.median(self.pick) / statistics.median(self.gloo)


@dataclass(frozen=True)
class Verdict:
    """One duel's outcome, as saved: what best_all_reduce runs at this size class."""

    runs: str                 # LIBRARY or one of ALGORITHMS
    challenger: str           # the model's pick that faced gloo
    pairs: int                # per mode
    back_to_back: float       # medians, challenger / gloo (< 1: challenger faster)
    single: float
    wins: str                 # pairs won by the margin, per mode, of `pairs`
    gloo_ms: float            # gloo's median single call
    why: str
    load: float = -1.0        # the machine's load (1-minute average) when decided


def verdict(modes: dict, challenger: str, final: bool) -> Verdict | None:
    """The verdict the pairs so far ({mode: Pairs}) support, or None (measure more).
    `final`: no more pairs will come, so no verdict yet means gloo's all_reduce."""
    n = min(len(p.pick) for p in modes.values())
    need, ratios = critical(n), {m: p.ratio() for m, p in modes.items()}
    wins = {m: p.wins() for m, p in modes.items()}
    stats = dict(challenger=challenger, pairs=n, back_to_back=ratios["back-to-back"],
                 single=ratios["single"], gloo_ms=statistics.median(modes["single"].gloo) * 1e3,
                 wins=", ".join(f"{m} {wins[m]}/{n}" for m in MODES))
    bound = f"false-win bound {ALPHA:.0%} over {LOOKS} looks"
    if n >= MIN_PAIRS and all(wins[m] >= need and ratios[m] < 1 - MARGIN for m in MODES):
        return Verdict(challenger, why=f"{challenger} faster by more than {MARGIN:.0%} in "
                       f"both modes: won {stats['wins']} pairs, {need} needed in each "
                       f"({bound})", **stats)
    lost = [m for m in MODES if n - wins[m] >= need]
    if n >= MIN_PAIRS and lost:
        return Verdict(LIBRARY, why=f"{challenger} surely not {MARGIN:.0%} faster "
                       f"({lost[0]}: {n - wins[lost[0]]}/{n} pairs not)", **stats)
    if final:
        return Verdict(LIBRARY, why=f"no verdict after {n} pairs ({stats['wins']} won, "
                       f"{need} needed): the library by default", **stats)
    return None


def run(next_batch, challenger: str, settle=None) -> Verdict:
    """The sequential duel: `next_batch(pairs so far)` -> {mode: Pairs} adds BATCH pairs per
    mode; `verdict` looks after each batch. `settle(found)` -> (stop, verdict)
    makes every rank agree (labs.choices: rank 0's word); None: as found (a simulation)."""
    modes = {m: Pairs() for m in MODES}
    while True:
        for mode, new in next_batch(len(modes[MODES[0]].pick)).items():
            modes[mode].pick += new.pick
            modes[mode].gloo += new.gloo
        found = verdict(modes, challenger, final=len(modes[MODES[0]].pick) >= MAX_PAIRS)
        stop, found = settle(found) if settle else (found is not None, found)
        if stop:
            return found


def holds(modes: dict) -> bool:
    """A saved pick's confirmation (CONFIRM_PAIRS per mode, in a new process): the same
    statistic, no test: its median below gloo's in both modes. Cheap, and one-sided on
    purpose: a pick that fails is measured again (a full duel), never trusted."""
    return all(p.ratio() < 1 for p in modes.values())
