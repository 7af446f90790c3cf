"""The course's harness: everything that is not a lesson, in packages named by their job."""
from pathlib import Path

# The course's folder (the repository root): computed here once, since this file never moves.
# Course files are named relative to it (labs/ring.py), in tracebacks and exercise notes.
COURSE_ROOT = Path(__file__).resolve().parents[2]
