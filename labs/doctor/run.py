"""The parent side: run the script under torchrun with the agent in every rank, watch the
ranks' records, stop a hang, and hand back everything the diagnosis needs.

The job is run by labs.harness.commands.torchrun (a session of its own, every process marked, a
deadline, nothing left running). The doctor stops it early when it is stuck: every rank
still running sits in a wait (its record says so) and no rank has recorded anything for
`hang_after_s` seconds. Then, if asked, py-spy reads each stuck rank's Python stack.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from labs.doctor.events import Event, last_state, read_events
from labs.harness.commands import torchrun

# Set in every rank's environment for the agent (labs/doctor/agent.py). They live here, not
# in the agent: importing labs.doctor must not import the agent, which torchrun runs as
# __main__ (runpy warns when the module is already imported, in every rank's stderr).
DIR_ENV, CWD_ENV = "P2P_DOCTOR_DIR", "P2P_DOCTOR_CWD"
BARE_ENV = "P2P_DOCTOR_BARE"      # "1": run the script without the record (overhead's baseline)
_RDZV = ("--standalone", "--rdzv-endpoint", "--rdzv_endpoint", "--master-addr", "--master_addr",
         "--nnodes")


@dataclass
class Job:
    """What to run: torchrun's options, the script and its arguments."""

    script: str
    args: list[str] = field(default_factory=list)
    torchrun_args: list[str] = field(default_factory=list)
    deadline_s: float = 90.0
    hang_after_s: float = 4.0
    py_spy: bool = False
    overhead: bool = False          # run it again without the record, to compare times

    def command(self) -> str:
        """As the reader would type it (the script's path as given)."""
        return " ".join(["python -m labs.doctor", *self.torchrun_args, self.script, *self.args])

    def nproc(self) -> int:
        """Ranks per node, as torchrun reads --nproc-per-node (1 if not given)."""
        args = " ".join(self.torchrun_args).replace("_", "-").replace("=", " ").split()
        for name, value in zip(args, args[1:]):
            if name == "--nproc-per-node" and value.isdigit():
                return int(value)
        return 1

    def torchrun_argv(self) -> list[str]:
        extra = [] if any(a.startswith(_RDZV) for a in self.torchrun_args) else ["--standalone"]
        script = str(Path(self.script).resolve())
        return [*extra, *self.torchrun_args, "-m", "labs.doctor.agent", script, *self.args]


@dataclass
class Outcome:
    """What the run left: each rank's events and output, how it ended."""

    job: Job
    events: dict[int, list[Event]]
    outputs: dict[int, torchrun.RankOutput]
    returncode: int | None          # torchrun's; None: the doctor stopped the job
    stopped: str = ""               # "stuck" or "deadline" when the doctor stopped it
    stacks: dict = field(default_factory=dict)     # rank -> torchrun.Stack (py-spy)
    seconds: float = 0.0
    leftovers: list = field(default_factory=list)
    bare: dict = field(default_factory=dict)       # rank -> script seconds without the record


def _stuck(folder: Path, quiet_s: float) -> bool:
    """Every rank that started has ended or waits, one waits, and nothing moved lately."""
    files = list(folder.glob("rank*.jsonl"))
    if not files or time.time() - max(f.stat().st_mtime for f in files) < quiet_s:
        return False
    events = read_events(folder)
    starts = [e for evs in events.values() for e in evs if e.event == "start"]
    if not starts or len(events) < starts[0].numel:
        return False
    states = [last_state(evs) for evs in events.values()]
    return "running" not in states and "waiting" in states


def _watch(node, folder: Path, job: Job, until: float) -> str:
    """Wait for the job to end; '' if it did, else why the doctor stops it."""
    while time.monotonic() < until:
        if node.wait(min(until, time.monotonic() + 0.25)) is not None:
            return ""
        if _stuck(folder, job.hang_after_s):
            return "stuck"
    return "deadline"


def _stacks(node) -> dict:
    try:
        return torchrun.py_spy_dump(node.rank_pids())
    except (RuntimeError, PermissionError, OSError):
        return {}


def run(job: Job) -> Outcome:
    """Run `job` to its end, or stop it when stuck or at the deadline; nothing is left.
    With job.overhead, a run that ended well is run again without the record."""
    outcome = _run_once(job)
    if _mesh_failed(outcome):
        outcome = _run_once(job)
    if job.overhead and outcome.returncode == 0:
        again = _run_once(job, {BARE_ENV: "1"})
        outcome.bare = {r: next((e.elapsed_s for e in evs if e.event == "exit"), 0.0)
                        for r, evs in again.events.items()}
        outcome.leftovers += again.leftovers
        outcome.seconds += again.seconds
    return outcome


def _mesh_failed(outcome: Outcome) -> bool:
    """gloo failed to connect its full mesh inside init_process_group, before any rank
    communicated: on a heavily loaded machine that happens now and then (pytorch#53270) and
    says nothing about the script, so the doctor runs it once more (as `launch` does)."""
    events = [e for evs in outcome.events.values() for e in evs]
    return (outcome.returncode not in (0, None)
            and any(e.event == "exit" and "connectFullMesh failed" in e.text for e in events)
            and not any(e.event in ("call", "batch") for e in events))


def _run_once(job: Job, extra_env: dict | None = None) -> Outcome:
    start, base = time.monotonic(), Path(tempfile.mkdtemp(prefix="p2p-doctor-"))
    folder = base / "records"
    folder.mkdir()
    # TORCH_DIST_INIT_BARRIER=1: init_process_group returns on no rank before every rank has
    # joined (torch's own store-based barrier, off by default). Without it a rank whose first
    # call fails at once can exit while a peer is still connecting its mesh, and that peer's
    # report reads "connectFullMesh failed: Connection closed by peer", not what its script did.
    env = {DIR_ENV: str(folder), CWD_ENV: os.getcwd(), "TORCH_DIST_INIT_BARRIER": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(torchrun.ROOT),
                                                        os.environ.get("PYTHONPATH")])),
           **(extra_env or {})}
    try:
        with torchrun._started([job.torchrun_argv()], env, base / "job") as nodes:
            # stopping takes up to GRACE_S: keep it inside the deadline
            until = start + max(1.0, job.deadline_s - torchrun.GRACE_S - 1.0)
            stopped = _watch(nodes[0], folder, job, until)
            stacks = _stacks(nodes[0]) if stopped and job.py_spy else {}
        outputs, _ = nodes[0].outputs()
        events = read_events(folder)
        code = None if stopped else nodes[0].proc.returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return Outcome(job, events, {o.rank: o for o in outputs}, code, stopped, stacks,
                   time.monotonic() - start, torchrun.leftovers())

