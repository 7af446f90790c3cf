"""Benchmarks: scripts that print ratios measured in one run, never timed tests.

    python -m labs.bench               # = ring
    python -m labs.bench ring          # the course's ring all-reduces vs dist.all_reduce
    python -m labs.bench launch        # launch start-up: forkserver (the course) vs spawn
    python -m labs.bench algorithms    # lesson 10's all-reduces and best_all_reduce vs gloo
    python -m labs.bench duel_error    # best_all_reduce's duel, simulated: how often it errs
"""
from __future__ import annotations

import argparse
import sys

from labs.bench import algorithms, duel_error, launch_time, ring
from labs.harness.ranks.measure import parse_size


def _comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _add_ring(sub) -> None:
    p = sub.add_parser("ring", help="the course's ring all-reduces vs dist.all_reduce "
                                    "(the default)")
    p.add_argument("--world-sizes", default="2,4", help="comma-separated, e.g. 2,3,4")
    p.add_argument("--sizes", default=ring.SIZES,
                   help=f"comma-separated sizes in bytes, K/M suffixes (default {ring.SIZES})")
    p.add_argument("--reps", type=int, default=10, help="timed repetitions per size")
    p.add_argument("--warmup", type=int, default=2, help="untimed repetitions per size")
    p.add_argument("--variants", default="ring,pipelined",
                   help="from labs.ring.VARIANTS: naive,pass-along,ring,pipelined")
    p.add_argument("--segment-bytes", type=parse_size, default=None,
                   help="segment size of the pipelined ring (default: its own default)")
    p.add_argument("--impl", choices=("solutions", "labs"), default="solutions",
                   help="benchmark the reference solutions or your own exercises in labs/")
    p.add_argument("--out", default="bench-results/ring.png", help="plot file ('' for none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_algorithms(sub) -> None:
    p = sub.add_parser("algorithms", help="lesson 10: trees, doubling, halving-doubling "
                                          "and best_all_reduce vs dist.all_reduce")
    p.add_argument("--world-sizes", default="2,4", help="comma-separated, e.g. 2,3,4")
    p.add_argument("--sizes", default=algorithms.SIZES,
                   help=f"comma-separated sizes in bytes (default {algorithms.SIZES})")
    p.add_argument("--names", default=algorithms.NAMES,
                   help="from labs.algorithms.CALLS (gloo's all_reduce is always timed)")
    p.add_argument("--reps", type=int, default=45,
                   help="timed repetitions per size (>= 5; 45: at 4 ranks on 2 cores, 15 let a "
                        "2x win show in one run and not the next)")
    p.add_argument("--warmup", type=int, default=2, help="untimed repetitions per size")
    p.add_argument("--out", default="bench-results/algorithms.png",
                   help="plot file ('' for none)")
    p.add_argument("--cache", default=None, metavar="FILE",
                   help="best_all_reduce's choices file (default .p2p-cache/best_all_reduce.json)")
    p.add_argument("--calibrate", action="store_true",
                   help="measure best_all_reduce's choices again before the timings")
    p.add_argument("--back-to-back", type=int, default=1, metavar="N",
                   help="time N calls back to back between barriers, as a training step's "
                        "gradient buckets (default 1: single calls)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m labs.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("launch", help="launch start-up time: forkserver vs spawn")
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--spawn-repeats", type=int, default=3)
    _add_ring(sub)
    _add_algorithms(sub)
    p = sub.add_parser("duel_error", help="best_all_reduce's duel on simulated times: its "
                                          "false-win rate (no workers)")
    p.add_argument("--duels", type=int, default=2000, help="simulated duels per scenario")
    p.add_argument("--seed", type=int, default=0)
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "ring")     # `python -m labs.bench [options]` means the ring benchmark
    opts = parser().parse_args(argv)
    if opts.command == "launch":
        launch_time.bench_launch(opts.world_size, opts.repeats, opts.spawn_repeats)
        return
    if opts.command == "duel_error":
        duel_error.print_rates(duel_error.rates(opts.duels, opts.seed))
        return
    world_sizes = [int(n) for n in _comma_list(opts.world_sizes)]
    sizes = [parse_size(s) for s in _comma_list(opts.sizes)]
    if opts.command == "ring":
        ring.bench_ring(world_sizes, sizes, _comma_list(opts.variants), opts.reps, opts.warmup,
                        opts.impl, opts.out, not opts.no_progress, opts.segment_bytes)
    elif opts.command == "algorithms":
        from labs.algorithms import CALLS
        unknown = [n for n in _comma_list(opts.names) if n not in CALLS]
        if unknown:
            parser().error(f"--names: unknown {', '.join(unknown)}; choose from "
                           f"{', '.join(CALLS)}")
        algorithms.bench_algorithms(world_sizes, sizes, _comma_list(opts.names), opts.reps,
                                    opts.warmup, opts.out, not opts.no_progress, opts.cache,
                                    opts.calibrate, opts.back_to_back)
    else:
        parser().print_help()
