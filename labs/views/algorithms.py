"""Notebook 10's side: launches with a reference fallback, schedules as text and pictures,
the model's predictions, the measured sweep and its verdicts."""
from __future__ import annotations

import statistics

import matplotlib.pyplot as plt

import labs.algorithms as lab
from labs import choices
from labs import WorkerError, launch, launch_exercise
from labs.harness.launch.leftovers import session_folder
from labs.harness.ranks.measure import format_size
from labs.harness.ranks.calls import SENDS
from labs.harness.ranks.exercises import SOLUTIONS_ENV
from labs.harness.notebook.plots import OP_COLORS
from labs.harness.notebook.timing import compare
from labs.harness.launch.unsolved import unsolved_exercise

KIB, MIB = 1 << 10, 1 << 20


def _silently(fn, world_size, args):
    """launch(fn, ...), falling back to the reference solutions without a word: for the
    launches after the first, once `launch_exercise` has said what is not solved yet."""
    try:
        return launch(fn, world_size, args, quiet=True)
    except WorkerError as exc:
        if unsolved_exercise(exc) is None:
            raise
    return launch(fn, world_size, args, quiet=True, env={SOLUTIONS_ENV: "1"})


# ----------------------------------------------------------------------------------------
# Schedules
# ----------------------------------------------------------------------------------------

def tree_rounds(world_size, root=0):
    """The binomial tree's messages, round by round: [[(src, dst), ...], ...]. In round k
    each relative rank v < 2^k that has the data sends it to v + 2^k."""
    rounds, mask = [], 1
    while mask < world_size:
        rounds.append([((v + root) % world_size, (v + mask + root) % world_size)
                       for v in range(mask) if v + mask < world_size])
        mask <<= 1
    return rounds


def tree_both_ways(world_size, numel=3):
    """From the trace of one run: each rank's messages in tree_broadcast and in tree_reduce
    (root 0), and whether the reduce's are the broadcast's reversed, in reverse order."""
    res = launch_exercise(lab.run_calls, world_size,
                          args=(["tree_broadcast", "tree_reduce"], numel))
    same = True
    for rank, calls in enumerate(res):
        def ops(name):
            return [f"{'->' if op == 'send' else '<-'}{peer}" for op, peer, _ in calls[name]
                    if op in ("send", "recv")]
        bcast, red = ops("tree_broadcast"), ops("tree_reduce")
        flipped = [("<-" if a.startswith("->") else "->") + a[2:] for a in reversed(bcast)]
        same = same and red == flipped
        print(f"rank {rank}:  broadcast {' '.join(bcast):<14} reduce {' '.join(red)}")
    print("the reduce's messages are the broadcast's, reversed and in reverse order, "
          f"on every rank: {same}")


def draw_tree(world_size=8):
    """Who holds the data after each round: lesson 07's star vs the binomial tree."""
    star = [[(0, dst)] for dst in range(1, world_size)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for ax, (name, rounds) in zip(axes, [("star (lesson 07)", star),
                                         ("binomial tree", tree_rounds(world_size))]):
        has = {0: 0}
        for k, messages in enumerate(rounds, 1):
            for src, dst in messages:
                ax.annotate("", xy=(k, dst), xytext=(k - 1, src),
                            arrowprops=dict(arrowstyle="->", color=OP_COLORS["send"], lw=1.2))
                has[dst] = k
        for rank, k in has.items():
            ax.plot(range(k, len(rounds) + 1), [rank] * (len(rounds) + 1 - k), "o",
                    color=OP_COLORS["recv"], ms=5)
        ax.set_title(f"{name}: {len(rounds)} rounds")
        ax.set_xlabel("round (a rank sends one message per round)")
        ax.set_xticks(range(len(rounds) + 1))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("rank (dots: holds the data)")
    axes[0].invert_yaxis()
    fig.tight_layout()
    plt.show()


def print_plan(algorithm, world_size, numel):
    """Each step of `algorithm` on every rank, from the plan the engine runs."""
    plans = [lab.plan(algorithm, r, world_size, numel) for r in range(world_size)]
    print(f"{algorithm}, {world_size} ranks, {numel} elements "
          f"(send -> peer [elements], receive <- peer [elements], + = add it); "
          f"row k: each rank's own k-th step")
    for k in range(max(len(p) for p in plans)):
        cells = []
        for rank, steps in enumerate(plans):
            cells.append(f"r{rank}: {_step_text(steps[k]) if k < len(steps) else 'idle'}")
        print(f"step {k}: " + " | ".join(cells))


def _step_text(step):
    parts = []
    if step.send_to is not None:
        parts.append(f"->{step.send_to} {list(step.send)}")
    if step.recv_from is not None:
        parts.append(f"<-{step.recv_from} {list(step.recv)}{' +' if step.add else ''}")
    return " ".join(parts) or "wait"


def traffic(world_sizes, names, numel):
    """Per world size, name and rank: messages sent / elements sent, from the trace of one
    run (the engine's algorithms, lab.ALGORITHMS, bypass the tracer: from their plans)."""
    traced = [n for n in names if n not in lab.ALGORITHMS]
    for p in world_sizes:
        run = launch_exercise if p == world_sizes[0] else _silently   # say it once
        res = run(lab.run_calls, p, args=(traced, numel))
        print(f"{p} ranks, a tensor of {numel} elements: per rank, messages sent / "
              f"elements sent")
        for name in names:
            if name in lab.ALGORITHMS:
                sent = [[s.send[1] - s.send[0] for s in lab.plan(name, r, p, numel)
                         if s.send_to is not None] for r in range(p)]
            else:
                sent = [[n for op, _, n in r[name] if op in SENDS] for r in res]
            label = f"{name} (plan)" if name in lab.ALGORITHMS else name
            print(f"  {label:<32}" + "  ".join(f"{len(s)}/{sum(s)}".rjust(11) for s in sent))


# What best_all_reduce runs in `check`, set rather than measured: every option at a size
# class the check's shapes reach (1 KiB: the small ones, 4 KiB: (1000,) float32, 16 KiB:
# (4099,) float32 and bfloat16, 64 KiB: (4099,) float64 and int64).
CHECK_RUNS = {1 * KIB: "doubling", 4 * KIB: lab.LIBRARY, 16 * KIB: "halving-doubling",
              64 * KIB: "ring"}


def check(names, world_sizes, shapes=((), (0,), (3,), (2, 5), (1000,), (4099,))):
    """Every name vs dist.all_reduce for every world size, dtype and shape: one line each."""
    cases = [(d, s) for d in ("float32", "float64", "bfloat16", "int64") for s in shapes]
    ok = {}
    for p in world_sizes:
        run = launch_exercise if p == world_sizes[0] else _silently   # say it once
        res = run(lab.compare, p, args=(names, cases, CHECK_RUNS))
        for name in names:
            ok.setdefault(name, []).append(all(err <= allowed for r in res
                                               for (n, _, _), (err, allowed) in r.items()
                                               if n == name))
    for name in names:
        print(f"{name} matches dist.all_reduce on {', '.join(map(str, world_sizes))} ranks, "
              f"4 dtypes, {len(shapes)} shapes: {all(ok[name])}")
    return all(all(v) for v in ok.values())


# ----------------------------------------------------------------------------------------
# Timings: medians, ranges, verdicts computed from the numbers
# ----------------------------------------------------------------------------------------

def timing_table(samples, baseline):
    """{nbytes: {name: [seconds]}}: per size, median and range of each name (the baseline
    first) and each one's verdict against the baseline, computed from the ranges."""
    for nbytes, by_name in samples.items():
        table = compare({baseline: by_name[baseline], **by_name})
        print(f"{format_size(nbytes)}:\n{table}")
        for name in by_name:
            if name != baseline:
                print("  " + table.verdict(name, baseline))


def fit_model(world_size=2):
    """The model fitted on fresh workers: lesson 05's ping-pong fit, plus an addition."""
    model = launch(lab.fit_model, world_size)[0]
    print(f"alpha = {model.alpha * 1e6:.0f} us per message, beta = {model.beta / 1e9:.2f} "
          f"GB/s, gamma = {model.gamma * 1e12:.0f} ps per byte added")
    return model


def thresholds(world_size, model, smallest=1, largest=1 << 30):
    """Where the model's choice of plan changes: [(first size it holds for, algorithm),
    ...], by bisection."""
    out, lo = [(smallest, lab.choose_plan(world_size, smallest, model))], smallest
    while lo < largest:
        hi = min(lo * 2, largest)
        if lab.choose_plan(world_size, hi, model) != out[-1][1]:
            a, b = lo, hi
            while b - a > 1:
                mid = (a + b) // 2
                same = lab.choose_plan(world_size, mid, model) == out[-1][1]
                a, b = (mid, b) if same else (a, mid)
            out.append((b, lab.choose_plan(world_size, b, model)))
        lo = hi
    return out


def print_thresholds(model, world_sizes=(2, 3, 4)):
    """From which size on the model picks each algorithm, per world size (3 digits)."""
    def approx(nbytes):
        scale, unit = next((s, u) for s, u in ((MIB, "MiB"), (KIB, "KiB"), (1, "B"))
                           if nbytes >= s)
        return f"{nbytes / scale:.3g} {unit}"

    for p in world_sizes:
        print(f"{p} ranks: " + ", then ".join(f"{a} from {approx(n)}"
                                              for n, a in thresholds(p, model)))


def sweep(world_sizes, sizes, names, reps=5):
    """{p: {nbytes: {name: [seconds]}}}, interleaved repetitions on the same workers."""
    return {p: launch(lab.time_calls, p, args=(names, sizes, reps, 1), timeout=300)[0]
            for p in world_sizes}


def plot_sweep(measured, model):
    """Per world size: measured median with its range (markers) and the model (lines)."""
    fig, axes = plt.subplots(1, len(measured), figsize=(5 * len(measured), 4), sharey=True)
    for ax, (p, by_size) in zip(axes, measured.items()):
        sizes = list(by_size)
        names = list(next(iter(by_size.values())))
        for i, name in enumerate(names):
            color = f"C{i}"
            med = [statistics.median(by_size[n][name]) * 1e3 for n in sizes]
            low = [m - min(by_size[n][name]) * 1e3 for m, n in zip(med, sizes)]
            high = [max(by_size[n][name]) * 1e3 - m for m, n in zip(med, sizes)]
            # side by side around each size (log axis), so that markers do not hide each other
            shift = 2 ** (0.35 * (i - (len(names) - 1) / 2))
            ax.errorbar([n * shift for n in sizes], med, yerr=[low, high], fmt="o", ms=4,
                        color=color, label=name, capsize=2)
            if name in lab.ALGORITHMS:
                ax.plot(sizes, [lab.predict(name, p, n, model) * 1e3 for n in sizes], "--",
                        color=color, lw=1)
        ax.set(xscale="log", yscale="log", title=f"{p} ranks (dashed: the model)",
               xlabel="tensor size")
        ax.set_xticks(sizes, [format_size(n) for n in sizes])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("time (ms): median, bar = range")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    plt.show()


def choice_vs_measured(measured, model):
    """For every (p, size) of the sweep: the algorithm the model picks, the one measured
    fastest (median), the verdict between the two from their ranges, and the model's
    predicted time for its pick over the measured one (1.0: the model describes this run).
    On 2 ranks the ring and halving-doubling are the same plan: one name for both."""
    def same_plan(p, name):
        return "halving-doubling" if p == 2 and name == "ring" else name

    print(f"{'ranks':>5} {'size':>7}  {'model picks':<17} {'measured fastest':<17} "
          f"{'pick vs fastest':<44} predicted/measured")
    rows = []
    for p, by_size in measured.items():
        for nbytes, by_name in by_size.items():
            algos = {a: by_name[a] for a in lab.ALGORITHMS if a in by_name}
            pick = lab.choose_plan(p, nbytes, model)
            fastest = same_plan(p, min(algos, key=lambda a: statistics.median(algos[a])))
            if fastest == pick:
                verdict = "the same algorithm"
            else:
                verdict = compare({pick: algos[pick], fastest: algos[fastest]}).verdict(
                    fastest, pick).split(": ", 1)[1]
            off = lab.predict(pick, p, nbytes, model) / statistics.median(algos[pick])
            rows.append({"ranks": p, "bytes": nbytes, "pick": pick, "fastest": fastest,
                         "verdict": verdict, "predicted/measured": off})
            print(f"{p:>5} {format_size(nbytes):>7}  {pick:<17} {fastest:<17} {verdict:<44} "
                  f"{off:.2f}")
    return rows


# ----------------------------------------------------------------------------------------
# best_all_reduce's saved choices (labs/choices.py), on the lesson's own file
# ----------------------------------------------------------------------------------------

def lesson_file(model, world_sizes=(2, 3, 4)):
    """A choices file for this notebook, in a fresh temporary folder (yours stays as it is),
    holding the model fitted above for `world_sizes`: the duels need no second fit."""
    from pathlib import Path
    # Removed when the kernel ends (with its fork server's folder): workers read it until then.
    path = Path(session_folder("p2p-lesson10-")) / "best_all_reduce.json"
    for p in world_sizes:
        choices.save(path, p, "model", {"alpha": model.alpha, "beta": model.beta,
                                        "gamma": model.gamma})
    return path


def decide(world_size, sizes, path, show=True):
    """best_all_reduce's decisions at `sizes` on fresh workers, from `path` or measured
    now: [(nbytes, what runs, 'saved' or 'measured')] per rank; `show`: one line each."""
    res = launch(lab.decide_sizes, world_size, args=(sizes,), timeout=300,
                 env={choices.CACHE_ENV: path})
    if show:
        for nbytes, what, source in res[0]:
            print(f"{world_size} ranks, {format_size(nbytes):>7}: runs {what:<16} ({source})")
    return res


def show_file(path):
    """The file as best_all_reduce keeps it, one line per decision, with the load it was
    made under (the machine's 1-minute load average)."""
    data, note = choices.load(path)
    print(note or f"machine: {choices._describe(data.get('machine'))}")
    for ranks, entries in sorted(data["ranks"].items()):
        for label, e in entries.items():
            if label == "model":
                continue
            print(f"{ranks} ranks {label:>7}: runs {e['runs']:<16} {e['challenger']} / gloo "
                  f"(medians) back to back {e['back_to_back']:.2f}, single "
                  f"{e['single']:.2f}; {e['pairs']} pairs per mode, load {e['load']:.1f}: "
                  f"{e['why']}")


def simulated_duels(duels=300):
    """The duel's rule on simulated pairs (labs.bench.duel_error): how often it picks a
    challenger that is not faster, and one that is."""
    from labs.bench import duel_error
    rows = duel_error.rates(duels)
    duel_error.print_rates(rows)
    return rows


def short_duels(world_size, nbytes, duels=5, pairs=9):
    """gloo's all_reduce against itself in `duels` short duels of `pairs` pairs each: the
    ratio of medians each would report. Any ratio far from 1 is a 'winner' made of noise."""
    runs = launch(lab.gloo_duels, world_size, args=(nbytes, duels, pairs))[0]
    for k, t in enumerate(runs, 1):
        r = statistics.median(t["all_reduce"]) / statistics.median(t["all_reduce again"])
        print(f"duel {k}: {pairs} pairs, gloo / gloo (medians) = {r:.2f}")


def best_vs_gloo(world_size, sizes, path, reps=45, burst=1):
    """best_all_reduce against gloo and gloo against itself (the noise floor), medians of
    `reps` interleaved repetitions (of `burst` calls back to back), with the benchmark's
    verdict per size."""
    from labs.bench.algorithms import AGAIN, print_table, time_back_to_back
    names = ["all_reduce", AGAIN, "best"]
    measured = launch(time_back_to_back, world_size, args=(names, sizes, reps, 2, burst),
                      timeout=300, env={choices.CACHE_ENV: path})[0]
    decided = {n: (w, s) for n, w, s in decide(world_size, sizes, path, show=False)[0]}
    rows = [{"ranks": world_size, "bytes": n, "samples": measured[n], "choice": decided[n][0],
             "source": decided[n][1]} for n in sizes]
    print_table(rows, names, reps, burst)
    return rows
