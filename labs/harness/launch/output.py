"""Each rank's stdout/stderr: read back from its file and replayed in rank order, so a
cell prints the same thing on every run."""
import os
import re
import sys

# C++ log lines from gloo/c10d ("[E1130 02:28:04.344 ProcessGroupGloo.cpp:67] ..."). When
# one rank fails, its peers log connection errors at racy moments; the exception already
# says what happened, so the replay leaves these out (they stay in `.outputs`).
CPP_LOG_LINE = re.compile(r"^\[[EWIF]\d{4} \d\d:\d\d:\d\d")


# What a C++ abort prints just before SIGABRT (gloo's enforce failures): a rank that died
# of it has these lines in its WorkerError, so the replay leaves them out (said once).
ABORT_LINE = re.compile(r"^(terminate called after throwing an instance of |\s*what\(\): )")


def abort_lines(text: str) -> list:
    """The lines a C++ abort printed ('terminate called ...', '  what():  [...] 16 vs 8 ...')."""
    return [line for line in text.splitlines() if ABORT_LINE.match(line)]


def read_outputs(out_dir: str, world_size: int) -> dict:
    """rank -> everything it printed (ranks that never started are missing)."""
    outputs = {}
    for r in range(world_size):
        try:
            with open(os.path.join(out_dir, f"rank{r}.out"), errors="replace") as f:
                outputs[r] = f.read()
        except FileNotFoundError:
            pass
    return outputs


def replay(outputs: dict, died=()) -> None:
    """Print every rank's output, rank by rank, each line labelled `[rank R]`. `died`: ranks
    whose process died; the abort message they printed is left to the exception."""
    for r in sorted(outputs):
        for line in outputs[r].splitlines():
            if not CPP_LOG_LINE.match(line) and not (r in died and ABORT_LINE.match(line)):
                print(f"[rank {r}] {line}")
    sys.stdout.flush()
