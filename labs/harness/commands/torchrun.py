"""Start torchrun jobs from a notebook cell or a test, with a deadline and no leftovers,
and read their ranks' Python stacks with py-spy.

    run = run_job("hung_job.py", nproc=4, dump_when_stuck=True)   # labs/scripts/hung_job.py
    run.show()                  # the command, each rank's output in rank order, the exit code
    run.stacks[2].where()       # 'send  <-  swap_with (hung_job.py:34)', read by py-spy

Every job obeys the same rules, hang or not:
  * torchrun runs in a session of its own and writes each rank's output to files of its
    own (`--log-dir LOGDIR --redirects 3`), returned in rank order;
  * the caller waits until a deadline at most, then every process of the job is stopped:
    SIGTERM to torchrun (which stops its workers), then SIGKILL to anything left; torchrun
    also gets SIGTERM if the caller (a kernel) dies (Linux: PR_SET_PDEATHSIG);
  * every process carries a marker in its environment, found through /proc (the workers
    start sessions of their own: torchrun's process group does not cover them), so
    `leftovers()` can prove that none outlived its job.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

from labs.harness import COURSE_ROOT
from labs.harness.commands.listeners import ListenerScan
from labs.harness.commands.processes import parents
from labs.harness.launch import proc_stats

ROOT = COURSE_ROOT
SCRIPTS = ROOT / "labs" / "scripts"
MARKER = "P2P_COURSE_JOB"           # every process of a job inherits it
GRACE_S = 5.0                      # after SIGTERM, torchrun's time to stop its workers
# After one node failed, the others' time to exit by themselves before they are read and
# stopped: an agent whose ranks all succeeded waits in its exit barrier for every other agent
# (torch's exit_barrier_timeout: 300 s), so it would look hung for five minutes.
OTHERS_GRACE_S = 3.0
_runs = itertools.count()


# -- what a job leaves behind ----------------------------------------------------------------

@dataclass
class RankOutput:
    rank: int
    stdout: str
    stderr: str

    def error(self) -> str | None:
        """The last exception line this rank printed ('RuntimeError: ...'), if any."""
        lines = [re.sub(r"^\[rank\d+\]:\s?", "", line) for line in self.stderr.splitlines()]
        errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
        return errors[-1] if errors else None

    def log_lines(self, pattern: str) -> list[str]:
        """stderr lines matching `pattern`, without the log prefix (rank, level, time, file)."""
        prefix = re.compile(r"^(\[rank\d+\]:)?\[[IWEF]\d{4} [\d:.]+ \S+\] ")
        return [prefix.sub("", line) for line in self.stderr.splitlines()
                if re.search(pattern, line)]


# One line of a py-spy dump. `file` as py-spy prints it: a script's name, or a package path.
SpyFrame = namedtuple("SpyFrame", "function file line")


@dataclass
class Stack:
    """One `py-spy dump` of one rank: its main thread's Python frames, innermost first."""

    rank: int
    pid: int
    raw: str
    frames: list[SpyFrame]

    def where(self) -> str:
        """The call it is in, then the script's frames: 'send  <-  swap_with (hung_job.py:34)'."""
        mine = [f"{f.function} ({Path(f.file).name}:{f.line})" for f in self.frames
                if (SCRIPTS / Path(f.file).name).is_file() and f.function != "<module>"]
        return "  <-  ".join([self.frames[0].function if self.frames else "?"] + mine)

    def in_distributed(self) -> bool:
        """The innermost frame is a torch.distributed call (a wait, not the script's own work)."""
        return bool(self.frames) and "torch/distributed/" in self.frames[0].file


@dataclass
class JobRun:
    commands: list[str]             # as typed from the repository root
    returncodes: list[int | None]   # one per torchrun; None: stopped at the deadline
    ranks: list[RankOutput]         # in rank order, every node
    summaries: list[str]            # torchrun's own stderr, one per torchrun
    stacks: dict[int, Stack] = field(default_factory=dict)
    # node index -> its torchrun's own stack, for a node still running OTHERS_GRACE_S after
    # another node failed (then stopped): where the agent waited
    left_waiting: dict[int, Stack] = field(default_factory=dict)
    # what listened while it ran (run_job(..., listeners=True)): address -> "agent" (a
    # torchrun process itself: its rendezvous store) or "rank" (a rank's gloo listener)
    listeners: dict[str, str] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return all(code == 0 for code in self.returncodes)

    def show(self, stderr=False):
        """The command(s), what each rank printed (rank order), the exit code(s)."""
        for command in self.commands:
            print("$", command)
        for r in self.ranks:
            print(r.stdout, end="")
            if stderr and r.stderr.strip():
                print(f"--- rank {r.rank} stderr ---\n{r.stderr.rstrip()}")
        codes = ", ".join("stopped" if i in self.left_waiting else
                          "stopped at the deadline" if c is None else str(c)
                          for i, c in enumerate(self.returncodes))
        print(f"exit code{'s' if len(self.returncodes) > 1 else ''}: {codes}")
        failed = [i for i, c in enumerate(self.returncodes) if c not in (None, 0)]
        for node, stack in self.left_waiting.items():
            agent = next((f for f in stack.frames if "elastic/agent" in f.file), None)
            where = f": its torchrun waited in {agent.function} ({agent.file})" if agent else ""
            print(f"node {node} was still running {OTHERS_GRACE_S:g} s after node "
                  f"{', '.join(map(str, failed))} failed{where}; stopped")


# -- the processes ---------------------------------------------------------------------------

try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _PRCTL = None


def _die_with(parent: int, sig=signal.SIGTERM):
    """A preexec_fn: the child gets `sig` when `parent` (this kernel) dies."""
    def preexec():
        if _PRCTL is not None:
            _PRCTL(1, sig)                  # 1 = PR_SET_PDEATHSIG
            if os.getppid() != parent:      # the parent died before prctl took effect
                os._exit(1)
    return preexec


def _plain_env() -> dict[str, str]:
    """This process's environment, without what Jupyter and pytest add: Jupyter forces
    colours (FORCE_COLOR, CLICOLOR_FORCE), which py-spy would print as escape codes."""
    drop = ("FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST")}


def _environ(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().decode(errors="replace").split("\0")
    except OSError:
        return {}
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def _marked(token: str) -> list[int]:
    """Living processes whose environment holds MARKER=<token...>."""
    return sorted(p for p in parents() if _environ(p).get(MARKER, "").startswith(token))


def leftovers() -> list[str]:
    """Processes that any job of this kernel started and that still run, as `ps` shows them."""
    pids = ",".join(map(str, _marked(f"{os.getpid()}-")))
    ps = subprocess.run(["ps", "-o", "pid=,args=", "-p", pids], capture_output=True, text=True)
    return [line.strip() for line in ps.stdout.splitlines() if line.strip()] if pids else []


class _Torchrun:
    """One torchrun (one "node"), its output in files under `log_dir`."""

    def __init__(self, args: list[str], env: dict, log_dir: Path):
        self.log_dir = log_dir
        log_dir.mkdir(parents=True)
        argv = [sys.executable, "-m", "torch.distributed.run",       # what `torchrun` runs
                "--log-dir", str(log_dir / "ranks"), "--redirects", "3", *args]
        with open(log_dir / "torchrun.out", "w") as out, open(log_dir / "torchrun.err", "w") as err:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True,
                                         preexec_fn=_die_with(os.getpid()))

    def rank_pids(self) -> dict[int, int]:
        """rank -> pid of its workers running now (RANK is in their environment)."""
        children = [pid for pid, ppid in parents().items() if ppid == self.proc.pid]
        ranks = {pid: _environ(pid).get("RANK") for pid in children}
        return {int(rank): pid for pid, rank in ranks.items() if rank is not None}

    def wait(self, until: float) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        return None

    def outputs(self) -> tuple[list[RankOutput], str]:
        """Each rank's output, under its global rank (torchrun logs which ranks it gave its
        workers: LOGLEVEL=INFO), and torchrun's own stderr."""
        summary = (self.log_dir / "torchrun.err").read_text(errors="replace")
        found = re.search(r"global_ranks=\[([\d, ]+)\]", summary)
        ranks = [int(r) for r in found[1].split(",")] if found else None
        outputs = []
        for folder in sorted((self.log_dir / "ranks").glob("*/attempt_*/[0-9]*")):
            text = [(folder / f).read_text(errors="replace") if (folder / f).exists() else ""
                    for f in ("stdout.log", "stderr.log")]
            local = int(folder.name)
            outputs.append(RankOutput(ranks[local] if ranks else local, *text))
        return outputs, summary


@contextlib.contextmanager
def _started(node_args: list[list[str]], env: dict | None, base: Path):
    """Start one torchrun per entry of `node_args`, their files under `base`; stop every
    process of theirs on exit."""
    token = f"{os.getpid()}-{next(_runs)}-"     # ends with "-": no token prefixes another
    full_env = _plain_env()
    full_env.update(env or {}, **{MARKER: token, "LOGLEVEL": "INFO"})
    nodes = []
    try:
        for i, args in enumerate(node_args):
            nodes.append(_Torchrun(args, full_env, base / f"node{i}"))
        yield nodes
    finally:
        _stop(nodes, token)


def _stop(nodes: list[_Torchrun], token: str):
    for node in nodes:
        if node.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.proc.pid, signal.SIGTERM)       # torchrun stops its workers
    deadline = time.monotonic() + GRACE_S
    while _marked(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in _marked(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for node in nodes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait()


def _run(node_args, shown, env, deadline_s, nproc_to_dump=0, listeners=False) -> JobRun:
    """Start the nodes, py-spy every rank once all are stuck (if asked), wait, collect;
    with `listeners`, scan what the first node's processes listen on meanwhile."""
    until, base = time.monotonic() + deadline_s, Path(tempfile.mkdtemp(prefix="p2p-job-"))
    try:
        with _started(node_args, env, base) as nodes:
            scan = ListenerScan(nodes[0].proc.pid) if listeners else contextlib.nullcontext()
            with scan:
                stacks = _stuck_stacks(nodes[0], nproc_to_dump, until) if nproc_to_dump else {}
                left_waiting = _wait_all(nodes, until)
            stopped = {i for i, node in enumerate(nodes) if node.proc.poll() is None}
        ranks, summaries = [], []
        for node in nodes:
            outputs, summary = node.outputs()
            ranks, summaries = ranks + outputs, summaries + [summary]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    codes = [None if i in stopped else node.proc.returncode for i, node in enumerate(nodes)]
    agents = {node.proc.pid for node in nodes}
    heard = {addr: "agent" if pid in agents else "rank"
             for addr, pid in (scan.seen.items() if listeners else [])}
    return JobRun(shown, codes, sorted(ranks, key=lambda r: r.rank), summaries, stacks,
                  left_waiting, heard)


def _wait_all(nodes: list[_Torchrun], until: float) -> dict[int, Stack]:
    """Wait for every node until `until`; once one has failed, the others only
    OTHERS_GRACE_S more. Returns the stacks of the torchruns then still running."""
    while time.monotonic() < until:
        codes = [node.proc.poll() for node in nodes]
        if None not in codes:
            return {}
        if any(code not in (None, 0) for code in codes):
            until = min(until, time.monotonic() + OTHERS_GRACE_S)
            while time.monotonic() < until and any(n.proc.poll() is None for n in nodes):
                time.sleep(0.05)
            waiting = {i: n.proc.pid for i, n in enumerate(nodes) if n.proc.poll() is None}
            with contextlib.suppress(RuntimeError, PermissionError):
                return py_spy_dump(waiting) if waiting else {}
            return {i: Stack(i, pid, "", []) for i, pid in waiting.items()}
        time.sleep(0.05)
    return {}


# -- running jobs ----------------------------------------------------------------------------

def run_torchrun(args: list[str], env=None, deadline_s: float = 90.0) -> JobRun:
    """`torchrun ARGS` from the repository root, to its end or to the deadline."""
    return _run([list(args)], [" ".join(["torchrun", *args])], env, deadline_s)


def run_job(script: str, nproc: int = 4, args=(), env=None, deadline_s: float = 90.0,
            dump_when_stuck: bool = False, listeners: bool = False) -> JobRun:
    """`torchrun --standalone --nproc-per-node=N labs/scripts/<script> ARGS`, to the end or
    to the deadline. dump_when_stuck: once every rank is stuck, `py-spy dump` each one.
    listeners: note what the job listened on (JobRun.listeners)."""
    cli = ["--standalone", f"--nproc-per-node={nproc}", f"labs/scripts/{script}", *args]
    return _run([cli], [" ".join(["torchrun", *cli])], env, deadline_s,
                nproc if dump_when_stuck else 0, listeners)


def run_two_nodes(script: str, nproc_per_node: int = 2, args=(), env=None,
                  deadline_s: float = 90.0) -> JobRun:
    """The same script as two torchrun "nodes" on this machine, meeting through c10d."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def node(i, port):
        # Both agents run on 127.0.0.1: is_host says which one hosts the rendezvous store.
        return ["--nnodes=2", f"--nproc-per-node={nproc_per_node}", "--rdzv-backend=c10d",
                f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=first-job",
                f"--rdzv-conf=is_host={int(i == 0)}", "--local-addr=127.0.0.1",
                f"labs/scripts/{script}", *args]

    shown = [" ".join(["torchrun", *node(i, "PORT")]) for i in range(2)]
    return _run([node(0, port), node(1, port)], shown, env, deadline_s)


# -- reading stacks with py-spy --------------------------------------------------------------

def _stuck_stacks(node: _Torchrun, nproc: int, until: float) -> dict[int, Stack]:
    """What you check on a cluster: the same stack on every rank, each waiting inside a
    torch.distributed call, twice in a row. Here the kernel takes the second look: a dump
    is taken only while every rank's main thread sleeps, and counts if none of them ran
    (its CPU time in /proc) while it was taken. Under load one dump can take 2-3 s, and a
    3-s timeout leaves too little time for two."""
    pids, previous = {}, {}
    while time.monotonic() < until and node.proc.poll() is None:
        if len(pids) < nproc:
            pids = node.rank_pids()
            time.sleep(0.1)
            continue
        if not all(proc_stats.sleeping(pid) for pid in pids.values()):
            time.sleep(0.02)
            continue
        ran = {rank: proc_stats.main_thread_cpu_seconds(pid) for rank, pid in pids.items()}
        try:
            dumps = py_spy_dump(dict(sorted(pids.items())), nonblocking=True)
        except RuntimeError:            # a rank still starting Python, or already exiting
            dumps = {}
        still = None not in ran.values() and ran == {
            rank: proc_stats.main_thread_cpu_seconds(pid) for rank, pid in pids.items()}
        frames = {rank: d.frames for rank, d in dumps.items()}
        if dumps and all(d.in_distributed() for d in dumps.values()) and (
                still or frames == previous):      # without /proc: two dumps agree
            return dumps
        previous = frames
        time.sleep(0.05)
    raise TimeoutError("the job ended, or the deadline passed, before every rank was stuck")


def py_spy_dump(pids: dict[int, int], nonblocking: bool = False) -> dict[int, Stack]:
    """`py-spy dump --pid PID` for every {rank: pid}, all at once: the Python stack of each
    running process, which keeps running. nonblocking: without pausing it (exact only for
    a process that does not run meanwhile)."""
    spy = Path(sys.executable).with_name("py-spy")           # installed beside python
    spy = str(spy) if spy.exists() else "py-spy"
    running = {rank: subprocess.Popen([spy, "dump", *["--nonblocking"] * nonblocking,
                                       "--pid", str(pid)], env=_plain_env(),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      preexec_fn=_die_with(os.getpid(), signal.SIGKILL))
               for rank, pid in pids.items()}
    outputs = {rank: _finish(proc) for rank, proc in running.items()}
    for rank, (_, err, code) in outputs.items():
        if code != 0 and re.search(r"ermission|not permitted", err):
            raise PermissionError(f"py-spy could not read pid {pids[rank]}: reading another "
                                  "process's memory needs root, sudo, or (Linux) "
                                  "kernel.yama.ptrace_scope=0")
        if code != 0:
            raise RuntimeError(f"py-spy could not read pid {pids[rank]}: {err.strip()[:300]}")
    return {rank: Stack(rank, pids[rank], out, main_thread_frames(out))
            for rank, (out, _, _) in outputs.items()}


def _finish(proc: subprocess.Popen, timeout_s: float = 30.0) -> tuple[str, str, int]:
    with contextlib.suppress(subprocess.TimeoutExpired):
        out, err = proc.communicate(timeout=timeout_s)
        return out, err, proc.returncode
    proc.kill()
    return *proc.communicate(), -9


def main_thread_frames(dump: str) -> list[SpyFrame]:
    """The frames py-spy printed for the main thread, innermost first. py-spy names it
    "MainThread" when the process imported threading; else it is the thread whose id is
    the process's pid (Linux)."""
    frames, in_main = [], False
    pid = re.match(r"^Process (\d+):", dump)
    for line in dump.splitlines():
        if line.startswith("Thread "):
            in_main = '"MainThread"' in line or bool(pid) and line.startswith(f"Thread {pid[1]} ")
        elif in_main and (found := re.match(r"^\s+(.+?) \((.+):(\d+)\)$", line)):
            frames.append(SpyFrame(found[1], found[2], int(found[3])))
    return frames
