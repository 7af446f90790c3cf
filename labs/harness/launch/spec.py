"""What one launch is, built once by `launch` and sent whole to every worker, and how long
each step of a launch's life may take, each named once with why.

    spec = LaunchSpec(fn, world_size=4, args=(1024,), timeout=20.0, pg_timeout=15.0,
                      threads=1, env={"P2P_COURSE_SOLUTIONS": "1"})

Every worker gets the same pickled spec plus what is its own (its rank, its pipe, its
output file); nothing is passed as a positional tuple to keep in step on both sides.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchSpec:
    fn: object                 # module-level function, imported by name in each worker
    world_size: int
    args: tuple = ()
    timeout: float = 30.0      # seconds fn may run once every rank has joined
    pg_timeout: float = 22.5   # gloo's per-operation timeout inside the workers
    threads: int = 1           # torch intra-op threads per worker
    env: dict = field(default_factory=dict)    # environment variables set in each worker
    # a hang as soon as every rank still running has sat waiting in a torch.distributed call
    # this long with nothing completing (None: only gloo's timeout and `timeout` end one)
    stuck_after: float | None = None
    # with stuck_after: a hang as soon as one rank has sat this long outside any
    # torch.distributed call with nothing posted, completed or begun (None: never)
    idle_after: float | None = None


# -- the lifecycle of a launch, in seconds ---------------------------------------------------

# Starting and joining the group: a fresh fork server imports torch, a loaded machine is
# slow; the launch `timeout` counts only from the moment every rank has joined.
JOIN_TIMEOUT = 60.0
# The first launch of a kernel waits this long for the fork server to import torch (once).
FORKSERVER_START = 120.0
# After the first failure, the other ranks may take this long to report their own.
GRACE = 0.5
# How long a rank that is asked "where are you blocked?" may take to answer.
STATUS_WAIT = 1.0
# With stuck_after: how often the ranks are asked whether they all sit waiting.
STUCK_POLL = 0.5
# The stuck_after of the graders and of the notebooks' exercise cells: a hang once every
# rank still running has sat waiting in a torch.distributed call this long with nothing
# posted, completed or moving. What the ranks do tells a deadlock from a slow peer (a rank
# that computes, however slowly, is not waiting), so this can be short: the reader learns
# of a deadlock in seconds, not after gloo's timeout.
STUCK_SECONDS = 2.0
# Bytes a rank must move through its sockets and pipes since the last sign of progress to
# count as still transferring (a message of megabytes on a loaded machine can take seconds
# with no op completing); a rank stuck in a wait moves only its status replies, far fewer.
STUCK_QUIET_BYTES = 64 * 1024
# With stuck_after, the launch timeout counts from the last sign of progress anywhere (a rank
# posted, completed or finished an op, started a case, moved bytes or computed): a loaded
# machine slows every step, it cannot fake a hang. A loop that never ends keeps computing,
# so it is stopped at this many timeouts after every rank joined.
PROGRESS_CAP = 4
# The idle_after of the graders: a grader's case is small, so a rank that sits this long
# outside torch.distributed with nothing posted, completed, begun or computed (asleep) is
# stuck; one that computes is slow, not stuck (the timeout covers a loop). The largest gap
# between two such signs of the solutions' graders at world size 8 (gradients, ring, p2p,
# batching, patterns, collectives, algorithms, layouts, deadlocks, waiting) on a machine
# loaded 5-6 times its cores: 1.7 s.
# Told within 10 s: this, plus a poll, plus asking where each rank is.
IDLE_SECONDS = 6.0
# CPU seconds a rank must have used since the last sign of progress to count as computing
# (a rank sitting in a wait uses only what its status replies cost, far less).
BUSY_CPU_SECONDS = 0.25
# CPU seconds a rank may compute outside torch.distributed, in the body, with nothing posted,
# completed or begun, before it is told as a loop that never ends (idle_after must be set).
# A right body's largest such gap in the solutions' graders is under 1.7 s of wall time
# (above), so of CPU too; one that never ends reaches this in about as many seconds when it
# has a core. A Python loop over every element of a large case reaches it too: that is the
# other thing the message names.
SPIN_CPU_SECONDS = 4.0
# A rank that spent this share of a poll's interval runnable, waiting for a core, is busy on
# a loaded machine, not asleep (a sleep loop waits for a core only as it wakes).
STARVED_SHARE = 0.5
# After an interrupt, the same question with less patience: you want your prompt back.
STATUS_WAIT_INTERRUPTED = 0.5
# After every rank returned: the time they get to destroy the group and exit on their own.
RELEASE_WAIT = 2.0
# A worker that returned waits this long for Release before exiting anyway (a lost parent).
RELEASE_WAIT_IN_WORKER = 600.0
# A worker whose pipe closed may take this long to be reaped before its exit code is read.
DEATH_REAP = 1.0
# Killing and reaping each leftover worker (SIGKILL cannot be ignored: this is a bound).
KILL_REAP = 5.0
