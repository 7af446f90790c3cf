"""Imported by a grading fork server (tests/conftest.py preloads it): what every rank of
every grader's launch would otherwise compute again, computed once before the ranks fork.

The lessons' own communicating functions (lessons.scan: reads and parses the course's files,
about 0.6 s a rank) are scanned here; a rank forked later inherits the result and uses it
while the files' stat says they are unchanged (an edit of labs/ is scanned again)."""
import contextlib

from labs.harness.grading import lessons

# A lesson file that does not parse now is the grade's to report, not the fork server's:
# an exception here would stop the fork server, and with it every launch.
with contextlib.suppress(Exception):
    lessons.scan()
