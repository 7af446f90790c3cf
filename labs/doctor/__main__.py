"""`python -m labs.doctor [doctor options] [torchrun options] SCRIPT [ARGS]`.

Doctor options (before torchrun's): --deadline S (default 90: the whole run, stopping
included), --hang-after S (default 4: every rank waiting and nothing recorded for S
seconds is a hang), --py-spy (read each stuck rank's stack), --overhead (run a script that
ended well a second time without the record and compare its times), --out DIR (where the
report and the timeline PNG are saved; default: the current directory), --no-files.
Exit status: 0 clean, 1 problems, 2 the script itself could not run.
"""
from __future__ import annotations

import sys
from pathlib import Path

from labs.doctor import Job, examine

DOCTOR_FLAGS = {"--deadline": float, "--hang-after": float, "--out": str}


def split(argv: list[str]) -> tuple[dict, list[str], str, list[str]]:
    """(doctor options, torchrun options, SCRIPT, script args). SCRIPT is the first
    argument ending in .py."""
    own, i = {"py_spy": False, "files": True, "overhead": False}, 0
    switches = {"--py-spy": ("py_spy", True), "--no-files": ("files", False),
                "--overhead": ("overhead", True)}
    while i < len(argv) and argv[i] in (*DOCTOR_FLAGS, *switches):
        flag = argv[i]
        if flag in DOCTOR_FLAGS:
            own[flag[2:].replace("-", "_")] = DOCTOR_FLAGS[flag](argv[i + 1])
            i += 2
        else:
            own[switches[flag][0]] = switches[flag][1]
            i += 1
    rest = argv[i:]
    scripts = [k for k, a in enumerate(rest) if a.endswith(".py")]
    if not scripts:
        raise SystemExit("usage: python -m labs.doctor [--deadline S] [--hang-after S] "
                         "[--py-spy] [--overhead] [--out DIR] [torchrun options] SCRIPT.py "
                         "[ARGS]")
    k = scripts[0]
    return own, rest[:k], rest[k], rest[k + 1:]


def main(argv=None) -> int:
    own, torchrun_args, script, args = split(list(sys.argv[1:] if argv is None else argv))
    if not Path(script).is_file():
        print(f"{script}: no such file", file=sys.stderr)
        return 2
    job = Job(script, args, torchrun_args, own.get("deadline", 90.0),
              own.get("hang_after", 4.0), own["py_spy"], own["overhead"])
    report = examine(job)
    if own["files"]:
        save(report, Path(own.get("out", ".")), Path(script).stem)
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
