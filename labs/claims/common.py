"""What the claim modules share: one launch read by several claims, and the stable part
of an outcome (a hang's or an error's brief, gloo's message without its source path)."""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

from labs import HangError, WorkerError, launch
from labs.harness.ranks.gloo_text import stable
from labs.harness.ranks.words import Words

# A claim that shows a hang: gloo's own timeout fires in the workers after 1.5 s; the
# launch deadline is only a safety net.
HANG = dict(timeout=10, pg_timeout=1.5)


class Ended(Words):
    """How a claim's launch ended."""

    RETURNED = "returned"     # with `results`
    HANG = "hang"             # with `brief`: what each rank was blocked in
    ERROR = "error"           # with `brief`: what each rank raised or died of


@dataclass
class Ending:
    """How one launch ended (`kind`), and what it left."""

    kind: Ended
    results: list = field(default_factory=list)
    brief: str = ""                  # one line per rank, joined with "; "
    error: Exception | None = None


def attempt(fn, world_size, args=(), **kwargs) -> Ending:
    """launch(fn, ...) quietly; a hang or a worker failure is an outcome, not an exception."""
    try:
        return Ending(Ended.RETURNED, launch(fn, world_size, args=args, quiet=True, **kwargs))
    except HangError as exc:
        return Ending(Ended.HANG, brief=one_line(exc.brief()), error=exc)
    except WorkerError as exc:
        return Ending(Ended.ERROR, brief=one_line(exc.brief()), error=exc)


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


def error_text(exc: BaseException) -> str:
    """'RuntimeError: message', first line, stable."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {stable(lines[0]) if lines else ''}"


