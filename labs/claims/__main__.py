"""python -m labs.claims: check every claim of the ledger on real gloo workers.

    python -m labs.claims                 all claims; exit status 1 if one is BROKEN
    python -m labs.claims --lesson 03     the claims of lesson 03
    python -m labs.claims --list          ids, lessons and texts; runs nothing

NCCL claims (they need GPUs) are listed as `sourced`, with their public source: not run.

Run it before changing the torch pin: a BROKEN row is a sentence in a lesson that the new
version makes false.
"""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

from labs.claims import CLAIMS, evaluate


def _printer(header, first_columns):
    """Print rows of fixed-width columns as they come; the last column is never padded."""
    widths = [max(len(str(v)) for v in [h, *column]) for h, column in zip(header, first_columns)]

    def print_row(row):
        cells = [str(c).ljust(w) for c, w in zip(row, widths)] + [str(row[-1])]
        print("  ".join(cells).rstrip(), flush=True)
    print_row(header)
    return print_row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labs.claims",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--lesson", help="only the claims of this lesson, e.g. 03")
    parser.add_argument("--list", action="store_true", help="list the claims, run nothing")
    parser.add_argument("--jobs", type=int, default=2,
                        help="claims checked at once (most of a hang claim is waiting)")
    args = parser.parse_args(argv)

    lesson = args.lesson.zfill(2) if args.lesson else None
    claims = [c for c in CLAIMS.values() if lesson is None or c.lesson == lesson]
    claims.sort(key=lambda c: c.lesson)           # stable: registration order within a lesson
    if not claims:
        print(f"no claims for lesson {args.lesson!r}; lessons with claims: "
              f"{', '.join(sorted({c.lesson for c in CLAIMS.values()}))}")
        return 2
    ids, lessons = [c.id for c in claims], [c.lesson for c in claims]
    if args.list:
        print_row = _printer(("claim", "lesson", "text"), (ids, lessons))
        for c in claims:
            print_row((c.id, c.lesson, c.text))
        return 0

    print_row = _printer(("claim", "lesson", "result", "observed"), (ids, lessons, ["sourced"]))
    results = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for c, result in zip(claims, pool.map(evaluate, claims)):    # in order, as they finish
            status = "sourced" if c.sourced else "holds" if result.holds else "BROKEN"
            print_row((c.id, c.lesson, status, result.observed))
            results.append(result)
    broken = [c.id for c, r in zip(claims, results) if not r.holds]
    sourced = sum(c.sourced for c in claims)
    print(f"\n{len(claims)} claims: {len(claims) - len(broken) - sourced} hold, "
          f"{len(broken)} BROKEN" + (f" ({', '.join(broken)})" if broken else "")
          + (f"; {sourced} NCCL claims sourced, not run here" if sourced else ""))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
