"""`python -m labs.doctor [doctor options] [torchrun options] SCRIPT [ARGS]`.

Doctor options: --deadline S (default 90: the whole run, stopping included), --hang-after S
(default 4: every rank waiting and nothing recorded for S seconds is a hang), --py-spy (read
each stuck rank's stack), --overhead (run a script that ended well a second time without the
record and compare its times), --out DIR (save the report and its timeline PNG there),
--trace FILE.json (the run as Chrome trace events: Perfetto, chrome://tracing). Nothing is
written unless --out or --trace says where. Torchrun's options (--nproc-per-node N, --nnodes,
--standalone, --rdzv-*, --master-*, ...) come before SCRIPT; everything after SCRIPT is the
script's. Both `--x=1` and `--x 1`. Exit status: 0 checked and clean, 1 problems, 2 the script
could not run, made no process group, or the command line is wrong.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from labs.doctor import Job, examine

# torchrun's options the doctor passes on: (spellings, type); None: a switch
TORCHRUN = [
    (("--nproc-per-node", "--nproc_per_node"), "count"),
    (("--nnodes",), str), (("--node-rank", "--node_rank"), int),
    (("--standalone",), None),
    (("--rdzv-backend", "--rdzv_backend"), str), (("--rdzv-endpoint", "--rdzv_endpoint"), str),
    (("--rdzv-id", "--rdzv_id"), str), (("--rdzv-conf", "--rdzv_conf"), str),
    (("--master-addr", "--master_addr"), str), (("--master-port", "--master_port"), int),
    (("--max-restarts", "--max_restarts"), int),
    (("--monitor-interval", "--monitor_interval"), float),
    (("--start-method", "--start_method"), str), (("--local-addr", "--local_addr"), str),
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


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # ARGS may be empty: only SCRIPT is required
        super().error(message.replace("SCRIPT.py, ARGS", "SCRIPT.py"))


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m labs.doctor", allow_abbrev=False,
        usage="%(prog)s [--deadline S] [--hang-after S] [--py-spy] [--overhead] [--out DIR] "
              "[--trace FILE.json] [torchrun options] SCRIPT.py [ARGS]",
        description="Run a torchrun script on gloo with every rank's communication recorded, "
                    "and diagnose it (observed on gloo, modelled for NCCL).")
    own = p.add_argument_group("doctor options")
    own.add_argument("--deadline", type=_seconds, default=90.0, metavar="S")
    own.add_argument("--hang-after", type=_seconds, default=4.0, metavar="S")
    own.add_argument("--py-spy", action="store_true")
    own.add_argument("--overhead", action="store_true")
    own.add_argument("--out", metavar="DIR")
    own.add_argument("--trace", metavar="FILE.json")
    run = p.add_argument_group("torchrun options (passed on)")
    for names, kind in TORCHRUN:
        dest = "t_" + names[0][2:].replace("-", "_")
        if kind is None:
            run.add_argument(*names, dest=dest, action="store_true")
        else:
            run.add_argument(*names, dest=dest, type=_count if kind == "count" else kind,
                             metavar="N" if kind in ("count", int) else "X")
    p.add_argument("script", metavar="SCRIPT.py")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
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
    for names, kind in TORCHRUN:
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


def main(argv=None) -> int:
    own, torchrun_args, script, args = split(list(sys.argv[1:] if argv is None else argv))
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
    print(report.text())
    return report.status


def save(report, folder: Path, stem: str) -> None:
    """The report as text, and its timeline as a PNG next to it."""
    folder.mkdir(parents=True, exist_ok=True)
    from labs.doctor import timeline
    report.timeline = str(timeline.save(report, folder / f"{stem}.doctor.png") or "")
    (folder / f"{stem}.doctor.txt").write_text(report.text() + "\n")


if __name__ == "__main__":
    sys.exit(main())
