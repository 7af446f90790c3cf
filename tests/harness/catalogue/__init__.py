"""The catalogue of learner bodies the graders are proven on (tests/harness/test_graders.py):
WRONG, (grader, world size, body, what the failure must say), and RIGHT, (grader, world
size, body), a correct body in another style than solutions/. A body is
"<lesson>.<round>:<function>" (or "<lesson>:<function>") in tests/graders/bodies/.
One module per lesson, named as the lesson's module (ring.py: lesson 05's graders); every
module here but messages.py is one, found by name. Each block's comment opens with its round:
  [lesson]     the lessons' own wrong turns, the kinds no grader names, other roads
  [red teams]  rounds 3 to 9: red teams that read the stubs, the graders and the bodies
  [ours]       rounds 10 to 16: reductions, precision, layouts, our own kinds
  [causes]     issue 44: messages that name the cause, a correct body a probe rejected
"""
import importlib
import pkgutil

LESSONS = sorted(m.name for m in pkgutil.iter_modules(__path__)
                 if m.name not in ("messages", "__main__"))
_MODULES = [importlib.import_module(f"{__name__}.{name}") for name in LESSONS]
WRONG = [entry for module in _MODULES for entry in module.WRONG]
RIGHT = [entry for module in _MODULES for entry in module.RIGHT]
