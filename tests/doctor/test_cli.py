"""The doctor's command line: argparse's usage line and one sentence for a wrong option
(exit 2, at once), one line for a script that does not compile, --help, nothing written beside
the user's files unless --out or --trace says where.

What ends before any job starts runs `main(argv)` in this process: a fresh `python -m
labs.doctor` spends its time importing torch (over 20 s on 2 loaded cores), not in the doctor."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from labs.doctor.__main__ import main, split
from labs.harness.commands.torchrun import ROOT

SCRIPT = ROOT / "labs" / "scripts" / "doctor" / "nccl" / "works_loop.py"


def cli(*argv, cwd=ROOT, timeout=150):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "labs.doctor", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@dataclass
class Done:
    """How `main(argv)` ended in this process: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_main(capsys, *argv) -> Done:
    try:
        code = main(list(argv))
    except SystemExit as done:          # argparse: a wrong option (2) or --help (0)
        code = done.code
    out, err = capsys.readouterr()
    return Done(code, out, err)


@pytest.mark.parametrize("argv, words", [
    (["--nproc-per-node", "0"], "at least 1 rank"),
    (["--nproc-per-node=abc"], "'abc' is not a whole number of ranks"),
    (["--nproc_per_node", "1.5"], "not a whole number"),
    (["--deadline", "abc"], "'abc' is not a number of seconds"),
    (["--deadline=0"], "more than 0 seconds"),
    (["--deadline", "5"], "'5': at least 15 seconds (starting torchrun and the ranks"),
    (["--hang-after", "-3"], "more than 0 seconds"),
    (["--hang-after=-3"], "more than 0 seconds"),
    (["--bogus-option"], "unrecognized arguments: --bogus-option"),
])
def test_a_wrong_option_gets_usage_and_one_sentence(capsys, argv, words):
    done = run_main(capsys, *argv, str(SCRIPT))
    assert done.returncode == 2 and done.stdout == "", done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("usage: python -m labs.doctor"), lines
    assert words in lines[1] and "Traceback" not in done.stderr


def test_help_says_what_each_option_does_its_default_and_the_exit_statuses(capsys):
    done = run_main(capsys, "--help")
    assert done.returncode == 0 and done.stderr == "", done
    text = " ".join(done.stdout.split("doctor options:")[1].split())    # past the usage line
    said = [("--deadline S", "default 90; at least 15"), ("--hang-after S", "default 4"),
            ("--py-spy", "default: off"), ("--overhead", "default: off"),
            ("--out DIR", "nothing is written"), ("--trace FILE.json", "not written"),
            ("--nproc-per-node N", "default 1"), ("--nnodes X", "default 1:1")]
    for (option, default), (following, _) in zip(said, said[1:]):   # in --help's order
        assert default in text[text.index(option):text.index(following)], option
    statuses = done.stdout[done.stdout.index("exit status:"):]
    assert [line.split()[0] for line in statuses.splitlines()[1:]
            if line[:3].strip()] == ["0", "1", "2", "130"], statuses
    assert "a process group was made and used" in statuses and "Ctrl-C" in statuses


def test_no_script_is_a_usage_error(capsys):
    done = run_main(capsys, "--nproc-per-node=2")
    assert done.returncode == 2 and "required: SCRIPT.py" in done.stderr, done.stderr


def test_both_spellings_and_forms_are_parsed():
    own, torchrun, script, args = split(["--hang-after=2", "--deadline", "30",
                                         "--nproc_per_node=3", "--standalone", "x.py",
                                         "--deadline", "1"])
    assert own["hang_after"] == 2.0 and own["deadline"] == 30.0
    assert torchrun == ["--nproc-per-node", "3", "--standalone"]
    assert script == "x.py" and args == ["--deadline", "1"]     # after SCRIPT: the script's


def test_a_syntax_error_is_one_line_and_nothing_runs(capsys, monkeypatch, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef f(:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    done = run_main(capsys, "--nproc-per-node", "2", str(bad))
    assert done.returncode == 2, done
    assert done.stderr.strip() == f"{bad}:3: SyntaxError: invalid syntax", done.stderr
    assert done.stdout == "" and "overhead" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.py"]


def test_a_missing_script_is_one_line(capsys, tmp_path):
    done = run_main(capsys, "--nproc-per-node", "2", str(tmp_path / "nope.py"))
    assert done.returncode == 2 and done.stderr.strip().endswith("nope.py: no such file")


@pytest.mark.slow
def test_a_clean_run_writes_only_the_trace_it_was_asked_for(tmp_path):
    done = cli("--trace", "run.json", "--nproc-per-node", "2", str(SCRIPT), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problems found on gloo; none predicted on NCCL" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
