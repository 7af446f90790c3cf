"""Lesson `doctor`'s learner bodies (tests/graders/bodies/doctor/), by round: WRONG,
(grader, world size, body, what the failure must say), and RIGHT, (grader, world size, body).
Each block's comment opens with its round's tag (tests/harness/catalogue/__init__.py)."""
from tests.graders import test_doctor

WRONG: list = []
RIGHT: list = []

# [ours]
# Thirteenth round, a red team (tests/graders/bodies/<lesson>/red10.py): a receive buffer read
# through DLPack or its address, global settings (autocast, Python's and numpy's generators,
# a process-wide module hook), an alias made with _make_subclass, a bool tensor turned int64
# by a whole turn; and a halo exchanged once, three deep (scripts/halo_deep_once.py).
WRONG += [
    (test_doctor.test_halo_exchange, 2, "scripts:halo_deep_once", "one edge value per message"),
]

# [ours]
# Fourteenth round, a red team (tests/graders/bodies/<lesson>/red11_a.py): what travels widened for the
# dtypes no case ran (float16 as float32, int8 as int64), a copy of the weight taken for the
# compute span, a halo of float64 cells sent as float32 (scripts/halo_float32_wire.py).
WRONG += [
    (test_doctor.test_halo_exchange, 4, "scripts:halo_float32_wire", "float64, as the cells are"),
]

# [ours]
# Lesson 12's script exercise, graded through the doctor: clean is not enough, the method is
# point to point, one edge value each way per neighbour per step.
WRONG += [
    (test_doctor.test_halo_exchange, 3, "scripts:halo_all_gather", "called all_gather"),
    (test_doctor.test_halo_exchange, 3, "scripts:halo_computed_locally", "sent to its neighbours"),
    (test_doctor.test_halo_exchange, 2, "scripts:halo_whole_tensors",
     ("sent to its neighbours", "one edge value per message")),
]

# [ours]
RIGHT += [
    (test_doctor.test_halo_exchange, 3, "scripts:halo_two_batches"),
]
