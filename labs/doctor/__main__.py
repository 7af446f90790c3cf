"""`python -m labs.doctor [doctor options] [torchrun options] SCRIPT [ARGS]`.

`--help` says what each option does, its default and the exit statuses (EXIT_STATUSES).
Torchrun's options (--nproc-per-node N, --nnodes, --standalone, --rdzv-*, --master-*, ...) come
before SCRIPT; everything after SCRIPT is the script's. Both `--x=1` and `--x 1`. Ctrl-C stops
the job (nothing is left running), prints one line and exits 130, as shells expect.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
from pathlib import Path

from labs.doctor import Job, examine

# torchrun's options the doctor passes on: (spellings, type, help); type None: a switch.
# The defaults are torch 2.13's (torch/distributed/run.py).
TORCHRUN = [
    (("--nproc-per-node", "--nproc_per_node"), "count", "ranks on this node (default 1)"),
    (("--nnodes",), str, "nodes, or MIN:MAX (default 1:1)"),
    (("--node-rank", "--node_rank"), int, "this node's rank, static rendezvous (default 0)"),
    (("--standalone",), None, "a rendezvous on this machine, on a free port (the doctor's "
                              "default when no other rendezvous option is given)"),
    (("--rdzv-backend", "--rdzv_backend"), str, "rendezvous backend (default static)"),
    (("--rdzv-endpoint", "--rdzv_endpoint"), str, "rendezvous HOST:PORT (default none)"),
    (("--rdzv-id", "--rdzv_id"), str, "the job's rendezvous id (default none)"),
    (("--rdzv-conf", "--rdzv_conf"), str, "rendezvous settings K1=V1,K2=V2 (default none)"),
    (("--master-addr", "--master_addr"), str, "rank 0's address, static rendezvous "
                                               "(default 127.0.0.1)"),
    (("--master-port", "--master_port"), int, "rank 0's port, static rendezvous "
                                               "(default: torchrun's)"),
    (("--max-restarts", "--max_restarts"), int, "restarts after a failure (default 0)"),
    (("--monitor-interval", "--monitor_interval"), float, "seconds between torchrun's checks "
                                                          "of its ranks (default 0.1)"),
    (("--start-method", "--start_method"), str, "how torchrun starts ranks (default spawn)"),
    (("--local-addr", "--local_addr"), str, "this node's address (default: looked up)"),
]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: it must be more than 0 seconds")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of ranks") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1 rank per node")
    return value


DEADLINE_S, HANG_AFTER_S = 90.0, 4.0
# The shortest --deadline: starting torchrun and 2 ranks (torch imported in each, the process
# group made) took 6.6-7.7 s on this 2-core machine lightly loaded, and stopping keeps 6 s of
# the deadline (torchrun's grace, labs/doctor/run.py): below 15 s a job could not even start.
DEADLINE_FLOOR_S = 15.0
EXIT_STATUSES = """exit status:
  0    checked and clean: a process group was made and used, no problems found on gloo and
       none predicted on NCCL (notes may be printed: a risk not seen in this run)
  1    problems (NCCL-only warnings included)
  2    nothing checked, or not all of it: the script raised (its error and line are shown;
       after a clean exchange the report says so), argparse refused the script's own command
       line, the job was stopped at its deadline, the script made no process group or never
       communicated through it, a call cannot be mapped onto the CPU, the script does not
       compile, or the doctor's own command line is wrong (the usage and one sentence)
  130  interrupted (Ctrl-C): the job was stopped, nothing is left running"""
HELP = {
    "--deadline": f"the whole run's limit in seconds, start-up and stopping included: the job "
                  f"is stopped then, and the report says how far it got (default "
                  f"{DEADLINE_S:g}; at least {DEADLINE_FLOOR_S:g}, what start-up needs)",
    "--hang-after": f"a hang: every running rank waits in a call and none has recorded anything "
                    f"for S seconds; the job is stopped and the hang diagnosed (default "
                    f"{HANG_AFTER_S:g})",
    "--py-spy": "read each stuck rank's Python stack with py-spy when a hang is stopped "
                "(default: off)",
    "--overhead": "run a script that ended well a second time without the record, and "
                  "compare the times (default: off)",
    "--out": "save the report (SCRIPT.doctor.txt), every rank's output (SCRIPT.ranks.txt) and "
             "the timeline (SCRIPT.doctor.png) in DIR (default: nothing is written)",
    "--trace": "write the run as Chrome trace events, for Perfetto or chrome://tracing "
               "(default: not written)",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # ARGS may be empty: only SCRIPT is required
        super().error(message.replace("SCRIPT.py, ARGS", "SCRIPT.py"))


def _deadline(text: str) -> float:
    value = _seconds(text)
    if value < DEADLINE_FLOOR_S:
        raise argparse.ArgumentTypeError(
            f"{text!r}: at least {DEADLINE_FLOOR_S:g} seconds (starting torchrun and the ranks, "
            f"then stopping them, takes that much)")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m labs.doctor", allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [--deadline S] [--hang-after S] [--py-spy] [--overhead] [--out DIR] "
              "[--trace FILE.json] [torchrun options] SCRIPT.py [ARGS]",
        description="Run a torchrun script on gloo with every rank's communication recorded,\n"
                    "and diagnose it: observed on gloo, modelled for NCCL.",
        epilog=EXIT_STATUSES)
    own = p.add_argument_group("doctor options")
    own.add_argument("--deadline", type=_deadline, default=DEADLINE_S, metavar="S",
                     help=HELP["--deadline"])
    own.add_argument("--hang-after", type=_seconds, default=HANG_AFTER_S, metavar="S",
                     help=HELP["--hang-after"])
    own.add_argument("--py-spy", action="store_true", help=HELP["--py-spy"])
    own.add_argument("--overhead", action="store_true", help=HELP["--overhead"])
    own.add_argument("--out", metavar="DIR", help=HELP["--out"])
    own.add_argument("--trace", metavar="FILE.json", help=HELP["--trace"])
    run = p.add_argument_group("torchrun options (passed on to torchrun)")
    for names, kind, text in TORCHRUN:
        dest = "t_" + names[0][2:].replace("-", "_")
        if kind is None:
            run.add_argument(*names, dest=dest, action="store_true", help=text)
        else:
            run.add_argument(*names, dest=dest, type=_count if kind == "count" else kind,
                             metavar="N" if kind in ("count", int) else "X", help=text)
    p.add_argument("script", metavar="SCRIPT.py", help="the script, run as torchrun runs it")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="the script's own arguments")
    return p


def split(argv: list[str]) -> tuple[dict, list[str], str, list[str]]:
    """(doctor options, torchrun options, SCRIPT, script args); a wrong command line exits 2
    with argparse's usage line and one sentence."""
    p = parser()
    ns = p.parse_args(argv)
    if ns.script.startswith("-"):
        p.error(f"unrecognized option before SCRIPT: {ns.script}")
    own = {"deadline": ns.deadline, "hang_after": ns.hang_after, "py_spy": ns.py_spy,
           "overhead": ns.overhead, "out": ns.out, "trace": ns.trace}
    torchrun_args = []
    for names, kind, _ in TORCHRUN:
        value = getattr(ns, "t_" + names[0][2:].replace("-", "_"))
        if kind is None and value:
            torchrun_args.append(names[0])
        elif kind is not None and value is not None:
            torchrun_args += [names[0], str(value)]
    return own, torchrun_args, ns.script, ns.args


def syntax_error(script: str) -> str:
    """'SCRIPT:LINE: SyntaxError: ...' if the script does not compile, else ''."""
    try:
        compile(Path(script).read_bytes(), script, "exec")
    except SyntaxError as e:
        return f"{script}:{e.lineno}: {type(e).__name__}: {e.msg}"
    return ""


INTERRUPTED = "interrupted (Ctrl-C): the job was stopped, nothing is left running"


def _interrupt_once(signum, frame):
    """The first Ctrl-C stops the run; later ones are ignored, so that they cannot cut the
    stopping of the job short (the job runs in sessions of its own: only the doctor gets
    the terminal's SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _stop_leftovers() -> None:
    """The job is stopped on the way out (labs.harness.commands.torchrun); a Ctrl-C that came
    while that stopping was under way cut it short: finish it, every process marked as this
    doctor's job."""
    from labs.harness.commands.torchrun import _marked
    for pid in _marked(f"{os.getpid()}-"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main(argv=None) -> int:
    before = signal.signal(signal.SIGINT, _interrupt_once)
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        _stop_leftovers()
        print(INTERRUPTED, file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, before)


def _main(argv: list[str]) -> int:
    own, torchrun_args, script, args = split(argv)
    if not Path(script).is_file():
        print(f"{script}: no such file", file=sys.stderr)
        return 2
    error = syntax_error(script)
    if error:
        print(error, file=sys.stderr)
        return 2
    job = Job(script, args, torchrun_args, own["deadline"], own["hang_after"], own["py_spy"],
              own["overhead"])
    report = examine(job)
    if own["out"]:
        save(report, Path(own["out"]), Path(script).stem)
    if own["trace"]:
        from labs.doctor import trace
        trace.save(report, Path(own["trace"]))
    print(report.text(printed=True))
    return report.status


def save(report, folder: Path, stem: str) -> None:
    """The report as text, every rank's output, and the timeline as a PNG next to them."""
    folder.mkdir(parents=True, exist_ok=True)
    from labs.doctor import timeline
    report.timeline = str(timeline.save(report, folder / f"{stem}.doctor.png") or "")
    report.saved_outputs = str(folder / f"{stem}.ranks.txt")
    Path(report.saved_outputs).write_text(report.all_outputs())
    (folder / f"{stem}.doctor.txt").write_text(report.text(printed=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
