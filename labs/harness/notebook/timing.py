"""Timing comparisons that let the numbers speak: medians, ranges, a computed verdict.

    samples = {"batched": [0.011, 0.010, ...], "blocking": [0.019, ...]}   # interleaved reps
    table = compare(samples, unit="ms")
    print(table)              # one row per variant: median, min-max, ratio to the first
    table.verdict("batched", "blocking")   # "batched is faster", or "within noise"

Two variants are "within noise" when their min-max ranges overlap: on a shared 2-core
machine that is the honest answer. Prose never names a winner; it tells the reader what
to look for, and this verdict, computed from the run, says what happened.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6}
MIN_REPS = 5


@dataclass
class Spread:
    median: float
    low: float
    high: float
    reps: int


@dataclass
class Comparison:
    spreads: dict          # name -> Spread (seconds)
    unit: str = "ms"

    def verdict(self, a: str, b: str, word: str = "faster") -> str:
        """'a is faster (1.8x)', 'b is faster (...)' or 'within noise': from the numbers."""
        sa, sb = self.spreads[a], self.spreads[b]
        if sa.high >= sb.low and sb.high >= sa.low:
            return f"{a} vs {b}: within noise (their ranges overlap)"
        fast, slow = (a, b) if sa.median < sb.median else (b, a)
        ratio = self.spreads[slow].median / self.spreads[fast].median
        return f"{a} vs {b}: {fast} is {word} ({ratio:.2g}x, ranges apart)"

    def __str__(self) -> str:
        scale, names = UNITS[self.unit], list(self.spreads)
        first = self.spreads[names[0]].median
        width = max(len(n) for n in names)
        lines = [f"{'':{width}}  median ({self.unit})  range ({self.unit})       "
                 f"vs {names[0]}   reps"]
        for name in names:
            s = self.spreads[name]
            lines.append(f"{name:{width}}  {s.median * scale:11.3f}  "
                         f"{s.low * scale:8.3f} - {s.high * scale:<8.3f}  "
                         f"{s.median / first:6.2f}x  {s.reps:5d}")
        return "\n".join(lines)


def spread(samples) -> Spread:
    samples = list(samples)
    if len(samples) < MIN_REPS:
        raise ValueError(f"a timing needs at least {MIN_REPS} repetitions, got {len(samples)}")
    return Spread(statistics.median(samples), min(samples), max(samples), len(samples))


def compare(samples: dict, unit: str = "ms") -> Comparison:
    """`samples`: name -> seconds of each repetition (interleaved with the other names)."""
    return Comparison({name: spread(s) for name, s in samples.items()}, unit)


def interleaved(functions: dict, reps: int = MIN_REPS, warmup: int = 1, clock=None) -> dict:
    """Time each function `reps` times, round-robin (a b c a b c ...), after `warmup`
    untimed rounds, so that a noisy moment hits every variant alike. name -> seconds."""
    clock = clock or time.perf_counter
    times = {name: [] for name in functions}
    for round_ in range(warmup + reps):
        for name, fn in functions.items():
            start = clock()
            fn()
            if round_ >= warmup:
                times[name].append(clock() - start)
    return times
