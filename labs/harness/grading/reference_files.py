"""The reference's records on disk, seen from the parent: where they live, a launch's staging
folder, kept when every rank finished, dropped otherwise, and the folder kept under its cap.
No torch here: `grade()` (run.py) uses it around each launch; the workers' side, which
makes the records, is reference_cache.py."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

CACHE_ENV = "P2P_REFERENCE_CACHE"        # the folder; unset or empty: no cache
STAGE_ENV = "P2P_REFERENCE_STAGING"      # a launch's own folder, for its workers' records
CAP_BYTES = 2 << 30                       # prune() keeps the newest entries within this


def folder() -> Path | None:
    where = os.environ.get(CACHE_ENV, "")
    return Path(where) if where else None


def staging_folder() -> str:
    """A new staging folder for one launch's records ("" when the cache is off)."""
    where = folder()
    if where is None:
        return ""
    try:
        where.mkdir(parents=True, exist_ok=True)
        return tempfile.mkdtemp(prefix=".launch-", dir=where)
    except OSError:
        return ""


def commit(staging: str) -> None:
    """The launch ended with every rank done: its records join the cache."""
    where = folder()
    if not staging or where is None:
        return
    for path in Path(staging).glob("*.pt"):
        try:
            os.replace(path, where / path.name)
        except OSError:
            pass


def discard(staging: str) -> None:
    if staging:
        shutil.rmtree(staging, ignore_errors=True)


def prune(where: Path | None = None, cap: int = CAP_BYTES) -> None:
    """Remove the oldest entries until the folder holds at most `cap` bytes (an edit of
    solutions/ or the harness leaves the old frame's entries unused), and the staging
    folders a killed run left."""
    where = where or folder()
    if where is None or not where.is_dir():
        return
    for left in where.glob(".launch-*"):
        if left.stat().st_mtime < time.time() - 3600:      # not a launch running now
            discard(str(left))
    files = sorted(where.glob("*.pt"), key=lambda p: p.stat().st_mtime, reverse=True)
    total = 0
    for path in files:
        total += path.stat().st_size
        if total > cap:
            path.unlink(missing_ok=True)
