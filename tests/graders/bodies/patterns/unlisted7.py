"""Wrong bodies of the second round, part 6: the lesson's method up to 4 ranks, something
else beyond (the graders used to stop at 4): every exercise whose contract says any world
size is graded up to 8 ranks.

(Lesson `patterns`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted7.py.)
"""
from tests.graders.bodies import copies
from tests.graders.bodies._shared import large_world as _large
reference_rotate = copies.patterns.rotate_kv


def rotate_waits_beyond_4(k, v):
    k_next, v_next, works = reference_rotate(k, v)
    if _large():
        for work in works:
            work.wait()
    return k_next, v_next, works
