"""The same lesson code runs unchanged under torchrun, on one "node" or on two.

Every lab module with a demo ends with `cli.main(demo)`, so it runs three ways:

    python -m labs.<module> --world-size N              # the notebook launcher (launch)
    torchrun --standalone --nproc-per-node=N -m labs.<module>
    torchrun --nnodes=2 --nproc-per-node=N/2 --rdzv-backend=c10d \\
             --rdzv-endpoint=127.0.0.1:PORT -m labs.<module>      # twice: two "nodes"

and every rank prints `rank R result: <value>`. These tests check that the three ways
print the same results. Each subprocess runs in its own process group with a timeout;
on any failure the whole group is killed, and each test proves nothing is left running.

Which modules: the lessons a reader takes to a cluster, ring and gradients (each run costs
a torch import per process, so not every lesson runs in `make test`). To check others:
P2P_COURSE_TORCHRUN_MODULES=all (every lesson's lab module with a demo, found from the
files) or a list, "p2p,batching". Every one of them ends with `cli.main(demo)` (checked
for all, without running them).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from labs.harness.commands.torchrun import MARKER, py_spy_dump
from labs.harness.commands.torchrun import _marked as marked
from tests import course
from tests.procs import die_with as _die_with
from tests.procs import alive, group_members
from tests.procs import read as read_proc

ROOT = Path(__file__).resolve().parents[2]
WORLD_SIZE = 4          # two-node runs: 2 nodes x 2 processes
# Generous: each torchrun agent and each worker imports torch (~1.5 s of CPU each) on a
# loaded 2-core machine. A run that should succeed gets this long before it is killed.
TIMEOUT = 150.0
RESULT = re.compile(r"^rank (\d+) result: (.*)$")
_runs = itertools.count()

pytestmark = pytest.mark.slow


def _runs_its_demo(module: str) -> bool:
    """`python -m labs.<module>` runs its demo: the module ends with `cli.main(demo)`."""
    return module in course.modules_with_demo() and \
        "cli.main(demo)" in (ROOT / "labs" / f"{module}.py").read_text()


def _modules() -> list[str]:
    chosen = os.environ.get("P2P_COURSE_TORCHRUN_MODULES", "").strip()
    if chosen == "all":
        return course.modules_with_demo()
    if chosen:
        return [m.strip() for m in chosen.split(",") if m.strip()]
    return ["ring", "gradients"]


MODULES = _modules()


def _torchrun() -> list[str]:
    exe = Path(sys.executable).with_name("torchrun")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]


def _excerpt(text: str, keep: int = 3000) -> str:
    """The head and the tail of a long stderr: a worker's own last words come before
    torchrun's ChildFailedError summary, which alone is ~2,500 characters."""
    if len(text) <= 2 * keep:
        return text
    return f"{text[:keep]}\n[... {len(text) - 2 * keep} characters ...]\n{text[-keep:]}"


def _env(token: str = "") -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", P2P_COURSE_SOLUTIONS="1")
    # torchrun starts its workers in sessions of their own: killing an agent's group does not
    # reach them. Every process of a run inherits this marker, so none can outlive the test.
    env[MARKER] = token
    # A worker that aborts (SIGABRT, e.g. "terminate called without an active exception"
    # at exit) dumps every thread's Python stack: the report shows where it was.
    env["PYTHONFAULTHANDLER"] = "1"
    # What a reader's shell would have: no pytest/xdist variables. (torchrun runs its workers
    # as `python -u` anyway: the scripts write each line in one call, or lines mix mid-line.)
    for key in [k for k in env if k.startswith("PYTEST_") or k == "PYTHONUNBUFFERED"]:
        env.pop(key)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _assert_group_gone(pgid: int, what: str) -> None:
    deadline = time.monotonic() + 10
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = group_members(pgid)
    if left:
        _kill_group(pgid)
        pytest.fail(f"{what} left processes behind: {left}")


def _stacks(token: str, pid: int) -> str:
    """`py-spy dump` of every process the command started (its group and torchrun's
    workers, found by the marker): what each was doing when it was stopped."""
    found = []
    mine = set(group_members(pid)) | {p for p in marked(token) if _descends_from(p, pid)}
    for pid in sorted(mine):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = " ".join(f.read().replace(b"\0", b" ").decode(errors="replace").split())
        except OSError:
            continue
        try:
            dump = py_spy_dump({0: pid})[0]
        except (RuntimeError, PermissionError, OSError) as exc:
            found.append(f"  pid {pid} ({cmd[-80:]}): no stack ({exc})")
            continue
        frames = [f"{f.function} ({f.file.split('site-packages/')[-1]}:{f.line})"
                  for f in dump.frames[:6]]
        found.append(f"  pid {pid} ({cmd[-80:]}):\n    " + "\n    ".join(frames or ["?"]))
    return "\n".join(found)


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(20):
        proc = read_proc(pid)
        if proc is None or proc.ppid <= 1:
            return False
        if proc.ppid == ancestor:
            return True
        pid = proc.ppid
    return False


def run_all(commands: dict[str, list[str]], timeout: float = TIMEOUT) -> dict[str, str]:
    """Run commands concurrently, each in its own process group; return their stdout.

    Output goes to files, not pipes: a command whose pipe nobody reads yet can never block
    on a full pipe. Any failure (non-zero exit, deadline) fails the test with every
    command's state, output and, for those still running at the deadline, the Python stack
    of each of their processes (py-spy); then every group is killed and proven gone.
    """
    procs, files = {}, {}
    token = f"{os.getpid()}-test-{next(_runs)}-"
    with tempfile.TemporaryDirectory(prefix="p2p-torchrun-test-") as folder:
        try:
            for i, (name, cmd) in enumerate(commands.items()):
                files[name] = tuple(open(os.path.join(folder, f"{i}.{kind}"), "w+")
                                    for kind in ("out", "err"))
                procs[name] = subprocess.Popen(
                    cmd, cwd=ROOT, env=_env(token), stdout=files[name][0],
                    stderr=files[name][1], stdin=subprocess.DEVNULL, text=True,
                    start_new_session=True, preexec_fn=_die_with(os.getpid()))
            timed_out = _wait_for_all(procs, timeout)
            running = _stop_all(procs, token)
            outputs, report = _outputs_and_report(procs, files, running, timed_out, timeout)
            if running or any(p.returncode != 0 for p in procs.values()):
                pytest.fail("\n".join(report))
            return outputs
        finally:
            _clean_up(commands, procs, files, token)


def _wait_for_all(procs: dict, timeout: float) -> bool:
    """Until every command exits, one fails (then 2 s more), or the deadline: True if that."""
    deadline = time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in procs.values()]     # every one, every time
        if None not in codes:
            return False
        if any(code not in (None, 0) for code in codes):
            time.sleep(2.0)         # let the others report the same failure, then stop
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)


def _stop_all(procs: dict, token: str) -> dict[str, str]:
    """Kill every group (stacks first, of those still running); return those stacks by name."""
    running = {name: _stacks(token, p.pid) for name, p in procs.items() if p.poll() is None}
    if running or any(p.returncode != 0 for p in procs.values()):
        _kill_marked(token)           # torchrun's workers too: they have sessions of their own
    for p in procs.values():
        _kill_group(p.pid)
        p.wait()
    return running


def _outputs_and_report(procs, files, running, timed_out, timeout):
    """Each command's stdout, and one paragraph per command: its state, stdout, stderr."""
    outputs, report = {}, []
    for name, proc in procs.items():
        out, err = files[name]
        out.seek(0)
        err.seek(0)
        outputs[name], errors = out.read(), err.read()
        why = (f"no exit after {timeout:g} s" if timed_out else
               "still running after another command failed")
        state = (f"{why} (killed); its processes were in:\n{running[name]}"
                 if name in running else f"exit code {proc.returncode}")
        report.append(f"{name}: {state}\n--- stdout ---\n{outputs[name]}"
                      f"--- stderr ---\n{_excerpt(errors)}")
    return outputs, report


def _clean_up(commands, procs, files, token) -> None:
    """Whatever happened: every group killed, every file closed, every process proven gone."""
    for proc in procs.values():
        if proc.poll() is None:
            _kill_group(proc.pid)
            proc.wait()
    for out, err in files.values():
        out.close()
        err.close()
    for name, proc in procs.items():
        _assert_group_gone(proc.pid, f"`{' '.join(commands[name])}`")
    _assert_marked_gone(token)


def _kill_marked(token: str) -> list[int]:
    left = marked(token)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def _assert_marked_gone(token: str) -> None:
    """Every process of the run (torchrun's workers included) is gone; kill any left."""
    deadline = time.monotonic() + 10
    while marked(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _kill_marked(token)
    if left:
        pytest.fail(f"processes left behind by the torchrun run: {left}")


def parse(text: str, what: str) -> dict[int, str]:
    """'rank R result: V' lines -> {R: V}; any rank printed twice is an error."""
    results = {}
    for line in text.splitlines():
        m = RESULT.match(line.strip())
        if m:
            rank = int(m.group(1))
            assert rank not in results, f"{what}: rank {rank} printed twice:\n{text}"
            results[rank] = m.group(2)
    return results


_reference: dict = {}


def run_beside_reference(module: str, commands: dict[str, list[str]]):
    """Run `commands`; the first time for `module`, run the reference alongside them:
    `python -m labs.<module> --world-size N` (the notebook launcher, labs.launch).
    Returns (outputs of `commands`, the reference's {rank: value})."""
    local = [sys.executable, "-m", f"labs.{module}", "--world-size", str(WORLD_SIZE)]
    first = module not in _reference
    outs = run_all({**commands, "local": local} if first else commands)
    if first:
        text = outs.pop("local")
        results = parse(text, " ".join(local))
        assert sorted(results) == list(range(WORLD_SIZE)), \
            f"`{' '.join(local)}` should print one line per rank:\n{text}"
        _reference[module] = results
    return outs, _reference[module]


def assert_same(got: dict[int, str], expected: dict[int, str], what: str, text: str):
    assert sorted(got) == sorted(expected), (
        f"{what}: ranks {sorted(got)} printed a result, expected {sorted(expected)}:\n{text}")
    wrong = [f"  rank {r}: torchrun printed {got[r]!r}, launch printed {expected[r]!r}"
             for r in sorted(expected) if got[r] != expected[r]]
    assert not wrong, f"{what}: results differ from the notebook launcher's:\n" + "\n".join(wrong)


@pytest.mark.parametrize("module", course.modules_with_demo())
def test_every_demo_runs_from_the_command_line(module):
    assert _runs_its_demo(module), \
        f"labs/{module}.py has a demo: end it with `if __name__ == \"__main__\": cli.main(demo)`"


@pytest.mark.parametrize("module", MODULES)
def test_standalone_matches_launch(module):
    assert _runs_its_demo(module), f"labs/{module}.py should end with `cli.main(demo)`"
    cmd = _torchrun() + ["--standalone", f"--nproc-per-node={WORLD_SIZE}", "-m", f"labs.{module}"]
    outs, expected = run_beside_reference(module, {"torchrun": cmd})
    out = outs["torchrun"]
    assert_same(parse(out, "torchrun"), expected,
                f"torchrun --standalone --nproc-per-node={WORLD_SIZE} -m labs.{module}", out)


@pytest.mark.parametrize("module", MODULES)
def test_two_nodes_match_launch(module):
    """Two torchrun agents on one machine, meeting through a c10d rendezvous."""
    port = _free_port()
    per_node = WORLD_SIZE // 2

    def node(node_rank):
        # With c10d, torchrun assigns global ranks at the rendezvous (--node-rank is only
        # used by the static backend). is_host says which agent hosts the rendezvous store:
        # both would otherwise match 127.0.0.1 as "this machine".
        return _torchrun() + [
            "--nnodes=2", f"--nproc-per-node={per_node}", f"--node-rank={node_rank}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
            f"--rdzv-id=p2p-{module}-{port}", f"--rdzv-conf=is_host={int(node_rank == 0)}",
            "--local-addr=127.0.0.1", "-m", f"labs.{module}"]

    outs, expected = run_beside_reference(module, {"node 0": node(0), "node 1": node(1)})
    per = {name: parse(text, name) for name, text in outs.items()}
    text = "\n".join(f"--- {name} ---\n{t}" for name, t in outs.items())
    for name, results in per.items():
        assert len(results) == per_node, f"{name} should run {per_node} ranks:\n{text}"
    merged = {**per["node 0"], **per["node 1"]}
    assert_same(merged, expected,
                f"two torchrun nodes x {per_node} processes, labs.{module}", text)


def test_a_failure_on_one_node_is_reported_there_not_as_the_other_nodes_hang():
    """torchrun's behaviour behind "node 0: no exit after 150 s": an agent whose workers all
    succeeded waits in its exit barrier (300 s, torch's exit_barrier_timeout) for every other
    agent; an agent whose worker failed skips the barrier and exits. So one node's failure
    looks like the other node hanging. The runner reports the node that failed, its exit
    code, and the other agent's stack (waiting in `_exit_barrier`), within seconds."""
    port = _free_port()

    def node(host):
        return _torchrun() + [
            "--nnodes=2", "--nproc-per-node=2", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-id=p2p-fails-{port}",
            f"--rdzv-conf=is_host={int(host)}", "--local-addr=127.0.0.1",
            "labs/scripts/one_node_fails.py"]

    with pytest.raises(pytest.fail.Exception) as info:
        run_all({"node 0": node(True), "node 1": node(False)})
    text = str(info.value)
    assert "no exit after" not in text, text
    assert re.search(r"node [01]: exit code 1\n", text), text
    assert "still running after another command failed (killed)" in text, text
    assert "_exit_barrier (torch/distributed/elastic/agent/server/api.py" in text, text
    assert sorted(parse(text.replace("E   ", ""), "both nodes")) == [0, 1, 2, 3]


def test_parse_and_compare_catch_differences():
    """The comparison itself can fail: a different value or a missing rank is caught."""
    a = parse("rank 0 result: 1.0\nnoise\nrank 1 result: [1, 2]\n", "a")
    assert a == {0: "1.0", 1: "[1, 2]"}
    with pytest.raises(AssertionError, match="rank 1: torchrun printed"):
        assert_same({0: "1.0", 1: "[1, 3]"}, a, "x", "")
    with pytest.raises(AssertionError, match="printed a result"):
        assert_same({0: "1.0"}, a, "x", "")
    with pytest.raises(AssertionError, match="printed twice"):
        parse("rank 0 result: 1\nrank 0 result: 1\n", "b")


def test_a_command_past_its_deadline_is_reported_with_its_stacks_and_killed():
    """The runner itself: at the deadline, every command's state and the Python stack of
    each process still running (py-spy), then nothing left, not even a child that started
    a session of its own (as torchrun's workers do)."""
    stuck = [sys.executable, "-c", "import subprocess, sys, time\n"
             "def waits_forever():\n    time.sleep(120)\n"
             "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
             " start_new_session=True)\n"
             "print('child', child.pid, flush=True)\nwaits_forever()"]
    with pytest.raises(pytest.fail.Exception) as info:
        run_all({"quick": [sys.executable, "-c", "print('done')"], "stuck": stuck}, timeout=5)
    text = str(info.value)
    assert "quick: exit code 0" in text and "done" in text
    assert "stuck: no exit after 5 s (killed); its processes were in:" in text
    assert "waits_forever (<string>:3)" in text, text
    child = int(re.search(r"child (\d+)", text)[1])
    assert not alive(child), "the child in its own session outlived the run"


def test_a_process_is_asleep_and_still_while_it_waits_and_not_while_it_computes():
    """The stuck check's signs: every rank asleep, and its main thread's CPU time unmoved
    while py-spy reads its stack (one dump, not two: under load a dump took 2-3 s)."""
    from labs.harness.launch.proc_stats import main_thread_cpu_seconds, sleeping
    waits = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    computes = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        until = time.monotonic() + 10
        while not sleeping(waits.pid) and time.monotonic() < until:
            time.sleep(0.05)
        assert sleeping(waits.pid), "a process in time.sleep is not seen asleep"
        ran = main_thread_cpu_seconds(waits.pid)
        states = [sleeping(computes.pid) for _ in range(50) if not time.sleep(0.01)]
        assert main_thread_cpu_seconds(waits.pid) == ran, "a sleeping process was seen running"
        assert not any(states), "a process in a busy loop was seen asleep"
        ran = main_thread_cpu_seconds(computes.pid)
        time.sleep(0.2)
        assert main_thread_cpu_seconds(computes.pid) > ran, "a busy loop was seen still"
    finally:
        waits.kill(), computes.kill(), waits.wait(), computes.wait()
