"""Bodies the graders must judge right, one module per lesson: for each exercise, the wrong
ones learners write (each missing what the exercise teaches, values right where possible,
so that only the method check can catch it) and one correct body in another style than
solutions/. The graders' own tests grade each with
impl="tests.graders.bodies.<lesson>:<name>" (listed in tests/harness/catalogue/, run by
tests/harness/test_graders.py).
"""
