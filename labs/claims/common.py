"""What the claim modules share: one launch read by several claims, and the stable part
of an outcome (a hang's or an error's brief, gloo's message without its source path)."""
from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field

from labs import HangError, WorkerError, launch

# A claim that shows a hang: gloo's own timeout fires in the workers after 1.5 s; the
# launch deadline is only a safety net.
HANG = dict(timeout=10, pg_timeout=1.5)


@dataclass
class Outcome:
    """How one launch ended: "returned" (with `results`), "hang" or "error" (with `brief`)."""

    kind: str
    results: list = field(default_factory=list)
    brief: str = ""                  # one line per rank, joined with "; "
    error: Exception | None = None


def attempt(fn, world_size, args=(), **kwargs) -> Outcome:
    """launch(fn, ...) quietly; a hang or a worker failure is an outcome, not an exception."""
    try:
        return Outcome("returned", launch(fn, world_size, args=args, quiet=True, **kwargs))
    except HangError as exc:
        return Outcome("hang", brief=one_line(exc.brief()), error=exc)
    except WorkerError as exc:
        return Outcome("error", brief=one_line(exc.brief()), error=exc)


def once(fn):
    """Run `fn(*args)` once per process and keep its value (thread-safe): several claims
    read the same launch, and the ledger may run claims in parallel threads."""
    cached = functools.cache(fn)
    lock = threading.Lock()

    @functools.wraps(fn)
    def shared(*args):
        with lock:
            return cached(*args)
    return shared


def one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def stable(text: str) -> str:
    """Without C++ source locations ('[enforce fail at .../pair.cc:801] '), object and
    socket addresses, ports: the part of a message that is the same on every run."""
    text = re.sub(r"\[(enforce fail at )?[^\]\[]*\.(cc|cpp|h|hpp)(:\d+)?\]\s*", "", text)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    text = re.sub(r"\s*\(\[[0-9.]+\]:[^)]*\)", "", text)     # a gloo pair's address
    return re.sub(r"(127\.0\.0\.1\]?):\d+", r"\1:<port>", text).strip()


def error_text(exc: BaseException) -> str:
    """'RuntimeError: message', first line, stable."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {stable(lines[0]) if lines else ''}"


def abort_reason(exc: WorkerError) -> str:
    """What a process killed by gloo printed before dying (its 'what():' line)."""
    outputs = getattr(exc, "outputs", {}) or {}
    for text in [str(exc), *outputs.values()]:
        for line in text.splitlines():
            if "what():" in line:
                return stable(line.split("what():", 1)[1])
    return "(it printed no reason)"
