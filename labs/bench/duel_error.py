"""`python -m labs.bench duel_error`: best_all_reduce's duel on simulated times, its error rate.

No workers: the pairs are drawn from a model of a call on a loaded machine, and the REAL
sequential duel (labs.duel.run, labs.duel.verdict, the same BATCH, looks and MAX_PAIRS as on
the ranks) decides each simulated duel. A simulated call takes `fast` x (1 + up to 10%)
seconds, plus, with probability `waits` (a rank waited for a CPU core), a wait drawn
uniformly in [0.4, 0.8]; a back-to-back time is the mean of BURST such calls. Three scenarios:

    identical     the challenger is gloo: every win is false
    contended     25% faster when no rank waits, but waits twice as often (the issue's case):
                  faster in lower quartile, slower in median; every win is false
    faster        half gloo's time, the same waits: a win is right

Deterministic (seeded): the same numbers every run. The test (tests/lessons/test_choices.py)
holds the first two under labs.duel.ALPHA.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from labs import duel
from labs.plans import LIBRARY


@dataclass(frozen=True)
class Caller:
    """A simulated all-reduce: its time when no rank waits, and how often one waits."""

    fast: float
    waits: float
    jitter: float = 0.10
    wait: tuple = (0.4, 0.8)

    def once(self, rng) -> float:
        t = self.fast * (1 + self.jitter * rng.random())
        return t + rng.uniform(*self.wait) if rng.random() < self.waits else t

    def timed(self, rng, mode) -> float:
        """One time of `mode`: a single call, or the mean of BURST calls back to back."""
        calls = duel.BURST if mode == "back-to-back" else 1
        return sum(self.once(rng) for _ in range(calls)) / calls


GLOO = Caller(1.0, 0.35)
SCENARIOS = {                       # name: (challenger, whether a win is false)
    "identical": (GLOO, True),
    "contended": (Caller(0.75, 0.70), True),
    "faster": (Caller(0.5, 0.35), False),
}


@dataclass(frozen=True)
class Rate:
    """One scenario's simulated duels: how often the challenger won, and its shape."""

    scenario: str
    duels: int
    wins: int
    false_win: bool           # every win in this scenario is an error
    mean_pairs: float         # pairs per mode the duels took
    median: float             # challenger / gloo, single calls: medians
    mean: float
    lower_quartile: float


def one_duel(challenger: Caller, rng) -> duel.Verdict:
    """One sequential duel, its pairs drawn from `challenger` and GLOO."""
    def next_batch(_):
        return {m: duel.Pairs([challenger.timed(rng, m) for _ in range(duel.BATCH)],
                              [GLOO.timed(rng, m) for _ in range(duel.BATCH)])
                for m in duel.MODES}
    return duel.run(next_batch, "challenger")


def shape(challenger: Caller, rng, n=20000) -> tuple[float, float, float]:
    """Its single calls over gloo's: (medians, means, lower quartiles)."""
    c = sorted(challenger.once(rng) for _ in range(n))
    g = sorted(GLOO.once(rng) for _ in range(n))
    return (statistics.median(c) / statistics.median(g), statistics.mean(c) / statistics.mean(g),
            c[n // 4] / g[n // 4])


def rates(duels=2000, seed=0, scenarios=SCENARIOS) -> list[Rate]:
    """`duels` simulated duels per scenario, seeded: a Rate each."""
    out = []
    for k, (name, (challenger, false_win)) in enumerate(scenarios.items()):
        rng = random.Random(seed * 1000 + k)
        found = [one_duel(challenger, rng) for _ in range(duels)]
        out.append(Rate(name, duels, sum(v.runs != LIBRARY for v in found), false_win,
                        statistics.mean(v.pairs for v in found), *shape(challenger, rng)))
    return out


def print_rates(rows: list[Rate]) -> None:
    print(f"best_all_reduce's duel (labs.duel), simulated: modes {', '.join(duel.MODES)}, "
          f"{duel.BATCH} pairs per look, {duel.MIN_PAIRS}-{duel.MAX_PAIRS} pairs, margin {duel.MARGIN:.0%}; "
          f"stated bound on a false win: {duel.ALPHA:.0%}")
    print(f"{'scenario':<11} {'median':>7} {'mean':>6} {'LQ':>6}   {'picked':>14} "
          f"{'pairs':>6}  what a win is")
    for r in rows:
        share = f"{r.wins}/{r.duels} ({r.wins / r.duels:.1%})"
        print(f"{r.scenario:<11} {r.median:>7.2f} {r.mean:>6.2f} {r.lower_quartile:>6.2f}   "
              f"{share:>14} {r.mean_pairs:>6.1f}  "
              f"{'an error' if r.false_win else 'right'}")
    print("(median, mean, LQ: the challenger's single calls over gloo's; < 1: faster)")
    worst = max((r.wins / r.duels for r in rows if r.false_win), default=0.0)
    print(f"highest false-win rate: {worst:.2%} (bound {duel.ALPHA:.0%}): "
          f"{'within' if worst <= duel.ALPHA else 'ABOVE'} the bound")
