"""What a wrong body's failure must say: fragments of the graders' messages, shared by the
catalogue's rounds (a failure matches if its message holds any fragment of a tuple)."""

BODIES = "tests.graders.bodies"
HUNG = "hung (world_size="
BUILTIN = "the lesson builds this from point-to-point"
PARTNERS = "in this method rank"
SIZES = ("the method sends", "the method has", "no message holds more than")
FRESH = ("returned a tensor it was given", "shares memory with an argument")
MEMORY = "replaced the memory of its argument"
ROAD = "while graded, data travels only through the process group"

# The order of posts and waits against the reference's (grading/order.py)
STEPS = "the method waits for that request first"
PIPELINE = "the pipeline forwards each segment as soon as it is reduced"
STAR = ("in this method rank", "never received", "never sent", "the method sends", "the method receives")

# A mismatch a checked exchange lets through: which rank sees it first is a race (the data's
# receive aborts on the short side, or a rank raises only after its data was sent).
# gloo's abort of a receiver whose buffer is smaller than the message, in lesson 04's words
TOO_BIG = "received a message larger than its buffer"
CHECKED_LATE = ("returned instead of raising ValueError", "killed by signal", TOO_BIG,
                "refuse before that data moves")
SUMS_ANY = ("other values than the method's partial sums", "add up no rank's data",
            "out of the tensor's order")
ROOT = ("whatever the route", *STAR)
BORROWED = "the course's own code"
IN_FLIGHT = "a buffer belongs to the transfer from post to wait"
ARRIVED = ("must be what arrived", "returns what it received", "came back to it")
KEPT = "a buffer (or list) you keep and reuse"
ONE_BATCH = "in ONE batch"
CONTENTS = "holding other values than the method sends"
INTO = "received into the memory of its argument"
STALE = "the same values when"

# On the positional probe, an encoding of the sums may show first as values that add up no
# rank, or as a message out of the tensor's order.
SUMS = ("other values than the method's partial sums", "add up no rank's data",
        "out of the tensor's order")
ONLY = "in this method rank 0 sends to rank 1 only"
PRIVATE = "never the machinery that grades it"
SHUFFLED = ("out of the tensor's order", "add up no rank's data", "other values than the method")
EXACT_MEAN = "(expected the exact mean)"
LATE = ") before computing block @ weight"
UNWAITED = "never waited for"
