"""Benchmarks: scripts that print ratios measured in one run, never timed tests.

    python -m labs.bench               # = ring
    python -m labs.bench ring          # the course's ring all-reduces vs dist.all_reduce
    python -m labs.bench launch        # launch start-up: forkserver (the course) vs spawn
    python -m labs.bench algorithms    # lesson 10's all-reduces and best_all_reduce vs gloo

`ring` options: --world-sizes 2,4  --sizes 1K,4K,...,64M  --reps 10  --warmup 2
--variants ring,pipelined  --impl solutions|labs (benchmark your own exercises)
--out bench-results/ring.png. Results: a table (time, algbw, busbw, ratio to gloo's
all_reduce) on stdout, a plot and a JSON file under bench-results/.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch.multiprocessing as tmp

from labs.harness.launch import launcher
from labs.welcome import first_all_reduce


def _spawn_launch(world_size):
    """The textbook way: torch.multiprocessing.spawn, children re-import torch each time.

    Rendezvous through a fresh TCPStore like launch() does, so only the start method differs.
    """
    import torch.distributed as dist
    import datetime
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=60))
    tmp.spawn(_spawn_worker, args=(world_size, store.port), nprocs=world_size, join=True)


def _spawn_worker(rank, world_size, port):
    import datetime
    import torch.distributed as dist
    store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False,
                          timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    first_all_reduce(rank, world_size)
    dist.destroy_process_group()


def bench_launch(world_size=4, repeats=7, spawn_repeats=3):
    """Median wall time of a `world_size`-rank launch (join the group + one all_reduce)."""
    t = time.perf_counter()
    launcher.launch(first_all_reduce, world_size, quiet=True)
    first = time.perf_counter() - t
    ours = []
    for _ in range(repeats):
        t = time.perf_counter()
        launcher.launch(first_all_reduce, world_size, quiet=True)
        ours.append(time.perf_counter() - t)
    spawn = []
    for _ in range(spawn_repeats):
        t = time.perf_counter()
        _spawn_launch(world_size)
        spawn.append(time.perf_counter() - t)
    med_ours, med_spawn = statistics.median(ours), statistics.median(spawn)
    print(f"{world_size}-rank launch (join gloo group + one all_reduce), same run:")
    print(f"  labs.launch, forkserver, first launch : {first:7.3f} s (fork server imports torch once)")
    print(f"  labs.launch, forkserver, median of {repeats} : {med_ours:7.3f} s")
    print(f"  torch.multiprocessing.spawn, median of {spawn_repeats}: {med_spawn:7.3f} s")
    print(f"  spawn / forkserver: {med_spawn / med_ours:.0f}x")
    return {"first": first, "forkserver": med_ours, "spawn": med_spawn}


# ----------------------------------------------------------------------------------------
# ring: the course's ring all-reduces vs dist.all_reduce (lesson 05)
# ----------------------------------------------------------------------------------------

RING_SIZES = "1K,4K,16K,64K,256K,1M,4M,16M,64M"


def parse_size(text: str) -> int:
    """'64K' -> 65536, '4M' -> 4194304, '512' -> 512 (binary units: KiB, MiB, GiB)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def format_size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def bench_ring(world_sizes=(2, 4), sizes=None, variants=("ring", "pipelined"), reps=10,
               warmup=2, impl="solutions", out="bench-results/ring.png", progress=True,
               segment_bytes=None):
    """Time each variant and dist.all_reduce at every (world size, size); print, plot, save.

    One launch per (world size, size): the variants and all_reduce run interleaved on the
    same workers (see labs.ring.time_variants), so their ratio is measured under the same
    conditions even on a busy machine. Returns the table rows.
    """
    from tqdm.auto import tqdm

    from labs import ring
    sizes = [parse_size(s) for s in RING_SIZES.split(",")] if sizes is None else list(sizes)
    names = [v for v in variants if v != "all_reduce"] + ["all_reduce"]
    # The variants are exercises: benchmark the reference solutions unless asked otherwise.
    env = {"P2P_COURSE_SOLUTIONS": "1" if impl == "solutions" else "0"}
    rows = []
    with tqdm(total=len(world_sizes) * len(sizes), desc="ring vs all_reduce", unit="size",
              disable=not progress) as bar:
        for world_size in world_sizes:
            for nbytes in sizes:
                bar.set_postfix_str(f"{world_size} ranks, {format_size(nbytes)}")
                res = launcher.launch(ring.time_variants, world_size,
                                      args=(names, [nbytes], reps, warmup, "float32",
                                            segment_bytes),
                                      timeout=900, quiet=True, env=env)
                times = res[0][nbytes]
                for v in names:
                    t = times[v]
                    rows.append({"ranks": world_size, "bytes": nbytes, "variant": v,
                                 "seconds": t, "algbw": ring.algbw(nbytes, t),
                                 "busbw": ring.busbw(nbytes, t, world_size),
                                 "ratio": times["all_reduce"] / t})
                bar.update()
    print_ring_table(rows, reps=reps)
    if out:
        save_ring_results(rows, out)
    return rows


def print_ring_table(rows, reps=None):
    print(f"\nring all-reduce vs dist.all_reduce (gloo), float32, median of {reps} "
          f"repetitions, slowest rank; busbw = algbw * 2(n-1)/n (nccl-tests)")
    print(f"{'ranks':>5}  {'size':>8}  {'variant':<11} {'time (ms)':>10} "
          f"{'algbw (GB/s)':>13} {'busbw (GB/s)':>13} {'ring/all_reduce':>16}")
    for r in rows:
        print(f"{r['ranks']:>5}  {format_size(r['bytes']):>8}  {r['variant']:<11} "
              f"{r['seconds'] * 1e3:>10.3f} {r['algbw'] / 1e9:>13.3f} {r['busbw'] / 1e9:>13.3f} "
              f"{r['ratio']:>15.2f}x")
    print("\nbusbw ratio to all_reduce, median over sizes >= 1 MiB "
          "(> 1: faster than gloo's own all_reduce):")
    for n in sorted({r["ranks"] for r in rows}):
        for v in dict.fromkeys(r["variant"] for r in rows):
            if v == "all_reduce":
                continue
            big = [r["ratio"] for r in rows if r["ranks"] == n and r["variant"] == v
                   and r["bytes"] >= 1 << 20]
            if big:
                print(f"  {n} ranks  {v:<11} {statistics.median(big):.2f}x "
                      f"(min {min(big):.2f}x, max {max(big):.2f}x, {len(big)} sizes)")


def save_ring_results(rows, out):
    """The plot at `out` (busbw and time vs size, one column per world size) + JSON."""
    import json
    import os

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    world_sizes = sorted({r["ranks"] for r in rows})
    fig, axes = plt.subplots(2, len(world_sizes), figsize=(5.5 * len(world_sizes), 7),
                             squeeze=False)
    for col, n in enumerate(world_sizes):
        for v in dict.fromkeys(r["variant"] for r in rows):
            pts = [r for r in rows if r["ranks"] == n and r["variant"] == v]
            x = [r["bytes"] for r in pts]
            style = dict(marker="o", ms=3, label=v, ls="--" if v == "all_reduce" else "-")
            axes[0][col].plot(x, [r["busbw"] / 1e9 for r in pts], **style)
            axes[1][col].plot(x, [r["seconds"] * 1e3 for r in pts], **style)
        axes[0][col].set_title(f"{n} ranks (gloo, loopback TCP)")
        axes[0][col].set_ylabel("bus bandwidth (GB/s)")
        axes[1][col].set_ylabel("time (ms)")
        axes[1][col].set_yscale("log")
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tensor size (bytes)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\nplot: {out}  data: {os.path.splitext(out)[0]}.json")


# ----------------------------------------------------------------------------------------
# algorithms: lesson 10's all-reduces and best_all_reduce vs dist.all_reduce
# ----------------------------------------------------------------------------------------

ALGORITHM_SIZES = "4K,16K,64K,256K,1M,4M,16M"
ALGORITHM_NAMES = "ring,doubling,halving-doubling,best"


def bench_algorithms(world_sizes=(2, 4), sizes=None, names=None, reps=15, warmup=2,
                     out="bench-results/algorithms.png", progress=True):
    """Time lesson 10's all-reduces and gloo's at every (world size, size), interleaved.

    The model best_all_reduce chooses by is fitted once per world size (labs.algorithms.
    fit_model) and used for every size. Prints a table of ratios (gloo's median time / the
    algorithm's; > 1: faster than gloo), saves a plot and a JSON file. Returns the rows.
    """
    from tqdm.auto import tqdm

    from labs import algorithms
    sizes = list(sizes or [parse_size(s) for s in ALGORITHM_SIZES.split(",")])
    names = [n for n in names or ALGORITHM_NAMES.split(",") if n != "all_reduce"]
    names = ["all_reduce"] + names          # gloo's, first: every ratio is against it
    rows = []
    with tqdm(total=len(world_sizes) * len(sizes), desc="algorithms vs all_reduce",
              unit="size", disable=not progress) as bar:
        for world_size in world_sizes:
            model = launcher.launch(algorithms.fit_model, world_size, quiet=True)[0]
            for nbytes in sizes:
                bar.set_postfix_str(f"{world_size} ranks, {format_size(nbytes)}")
                res = launcher.launch(algorithms.time_calls, world_size,
                                      args=(names, [nbytes], reps, warmup, model),
                                      timeout=900, quiet=True)[0][nbytes]
                rows.append({"ranks": world_size, "bytes": nbytes, "samples": res,
                             "choice": algorithms.choose(world_size, nbytes, model),
                             "model": [model.alpha, model.beta, model.gamma]})
                bar.update()
    print_algorithms_table(rows, names, reps)
    if out:
        save_algorithms_results(rows, names, out)
    return rows


def print_algorithms_table(rows, names, reps):
    from labs.harness.notebook.timing import compare
    print(f"\nall-reduce algorithms vs dist.all_reduce (gloo), float32, {reps} interleaved "
          f"repetitions, slowest rank; ratio = gloo median / median (> 1: faster than gloo)")
    others = [n for n in names if n != "all_reduce"]
    print(f"{'ranks':>5}  {'size':>8}  {'gloo ms (min-max)':>22}" +
          "".join(f"{n:>18}" for n in others) + "  best: its choice; verdict")
    for r in rows:
        s = r["samples"]
        gloo = statistics.median(s["all_reduce"])
        cells = "".join(f"{gloo / statistics.median(s[n]):>17.2f}x" for n in others)
        note = compare(s).verdict("best", "all_reduce") if "best" in s else ""
        print(f"{r['ranks']:>5}  {format_size(r['bytes']):>8}  {gloo * 1e3:>8.3f} "
              f"({min(s['all_reduce']) * 1e3:.3f}-{max(s['all_reduce']) * 1e3:.3f})"
              f"{cells}  {r['choice']}; {note}")
    if "best" in names:
        ratios = [statistics.median(r["samples"]["all_reduce"]) /
                  statistics.median(r["samples"]["best"]) for r in rows]
        print(f"\nbest_all_reduce / gloo: lowest ratio {min(ratios):.2f}x, "
              f"{sum(x >= 1.0 for x in ratios)} of {len(ratios)} cells >= 1.0x")


def save_algorithms_results(rows, names, out):
    """Per world size: median time and ratio to gloo vs size; the rows as JSON next to it."""
    import json
    import os

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    world_sizes = sorted({r["ranks"] for r in rows})
    fig, axes = plt.subplots(2, len(world_sizes), figsize=(5.5 * len(world_sizes), 7),
                             squeeze=False, sharex=True)
    for (top, bottom), n in zip(axes.T, world_sizes):
        pts = [r for r in rows if r["ranks"] == n]
        sizes = [r["bytes"] for r in pts]
        gloo = [statistics.median(r["samples"]["all_reduce"]) for r in pts]
        for name in names:
            med = [statistics.median(r["samples"][name]) for r in pts]
            style = dict(marker="o", ms=3, label=name,
                         ls="--" if name == "all_reduce" else "-")
            top.plot(sizes, [m * 1e3 for m in med], **style)
            bottom.plot(sizes, [g / m for g, m in zip(gloo, med)], **style)
        top.set(title=f"{n} ranks (gloo, loopback TCP)", ylabel="time (ms), median",
                yscale="log")
        bottom.set(ylabel="gloo time / time (> 1: faster)", xlabel="tensor size (bytes)",
                   xscale="log")
        bottom.axhline(1.0, color="grey", lw=0.8)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    data = os.path.splitext(out)[0] + ".json"
    with open(data, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\nplot: {out}  data: {data}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m labs.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("launch", help="launch start-up time: forkserver vs spawn")
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--repeats", type=int, default=7)
    p = sub.add_parser("ring", help="the course's ring all-reduces vs dist.all_reduce "
                                    "(the default)")
    p.add_argument("--world-sizes", default="2,4", help="comma-separated, e.g. 2,3,4")
    p.add_argument("--sizes", default=RING_SIZES,
                   help=f"comma-separated sizes in bytes, K/M suffixes (default {RING_SIZES})")
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
    p = sub.add_parser("algorithms", help="lesson 10: trees, doubling, halving-doubling "
                                          "and best_all_reduce vs dist.all_reduce")
    p.add_argument("--world-sizes", default="2,4", help="comma-separated, e.g. 2,3,4")
    p.add_argument("--sizes", default=ALGORITHM_SIZES,
                   help=f"comma-separated sizes in bytes (default {ALGORITHM_SIZES})")
    p.add_argument("--names", default=ALGORITHM_NAMES,
                   help="from labs.algorithms.CALLS (gloo's all_reduce is always timed)")
    p.add_argument("--reps", type=int, default=15, help="timed repetitions per size (>= 5)")
    p.add_argument("--warmup", type=int, default=2, help="untimed repetitions per size")
    p.add_argument("--out", default="bench-results/algorithms.png",
                   help="plot file ('' for none)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "ring")     # `python -m labs.bench [options]` means the ring benchmark
    opts = parser.parse_args(argv)
    if opts.command == "launch":
        bench_launch(opts.world_size, opts.repeats)
    elif opts.command == "ring":
        bench_ring([int(n) for n in opts.world_sizes.split(",")],
                   [parse_size(s) for s in opts.sizes.split(",")],
                   [v.strip() for v in opts.variants.split(",") if v.strip()],
                   opts.reps, opts.warmup, opts.impl, opts.out, not opts.no_progress,
                   opts.segment_bytes)
    elif opts.command == "algorithms":
        bench_algorithms([int(n) for n in opts.world_sizes.split(",")],
                         [parse_size(s) for s in opts.sizes.split(",")],
                         [n.strip() for n in opts.names.split(",") if n.strip()],
                         opts.reps, opts.warmup, opts.out, not opts.no_progress)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
