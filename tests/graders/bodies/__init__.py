"""Bodies the graders must judge right, one package per lesson: for each exercise, the wrong
ones learners write (each missing what the exercise teaches, values right where possible,
so that only the method check can catch it) and one correct body in another style than
solutions/. <lesson>/__init__.py holds the lesson's own, <lesson>/<round>.py a red-team
round's (the round is the module's name: red2, red10, unlisted3, ...). The graders' own tests
grade each with impl="tests.graders.bodies.<lesson>.<round>:<name>" (listed in
tests/harness/catalogue/, run by tests/harness/test_graders.py). copies.py: the reference
solutions compiled under another file name, for bodies that change one thing of them.
"""
