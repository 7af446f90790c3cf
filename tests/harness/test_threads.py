"""A process's threads read from /proc (labs/harness/commands/threads.py): a thread that ends
between the listing of /proc/self/task and the read of its name is not counted, and nothing
raises (the doctor's agent and lesson 11's scripts count gloo's threads this way)."""
from __future__ import annotations

import ctypes
import os
import threading
import time

import pytest

from labs.harness.commands import threads

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc")
PR_SET_NAME = 15


def _named_thread(name: str, release: threading.Event) -> threading.Thread:
    """A real thread whose kernel name (comm) is `name`; it ends when `release` is set."""
    ready = threading.Event()

    def body():
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
        ready.set()
        release.wait()

    thread = threading.Thread(target=body)
    thread.start()
    ready.wait()
    return thread


def _until_gone(path: str, seconds: float = 10.0) -> None:
    """join() returns when Python's part of a thread ends; the kernel reaps the thread a moment
    later, so /proc can still list it: wait for the kernel, boundedly."""
    deadline = time.monotonic() + seconds
    while os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} still exists {seconds} s after join()"
        time.sleep(0.001)


def test_a_thread_that_ends_during_the_listing_is_not_counted(monkeypatch):
    release = threading.Event()
    thread = _named_thread("vanishing", release)
    assert "vanishing" in threads.thread_names()
    listdir = os.listdir

    def listing_then_the_thread_ends(path):
        tids = listdir(path)
        release.set()
        thread.join()
        _until_gone(f"/proc/self/task/{thread.native_id}")  # gone before its comm is read
        return tids

    monkeypatch.setattr(threads.os, "listdir", listing_then_the_thread_ends)
    names = threads.thread_names()
    assert "vanishing" not in names and names, names


def test_threads_that_come_and_go_never_break_a_count():
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            short = [threading.Thread(target=lambda: None) for _ in range(8)]
            for t in short:
                t.start()
            for t in short:
                t.join()

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        for _ in range(300):
            assert threads.gloo_group_threads() == 0
    finally:
        stop.set()
        churner.join()
