"""Lesson NN: <topic>. The worker functions notebook NN launches, and its exercises.

TEMPLATE. To add lesson NN, copy this file to labs/<module>.py and write the lesson in it;
then copy
    labs/harness/templates/solution.py  to  solutions/<module>.py  (the reference bodies)
    tests/graders/template.py            to  tests/graders/test_<module>.py  (one test per exercise)
and add tests/lessons/test_<module>.py (what the notebook says about the demos, CI only),
notebooks/NN_<topic>.ipynb (its code does `import labs.<module> as lab`), one entry per
exercise in labs/harness/grading/methods.py (its method), and a row in the README's lesson
table. If the notebook needs plots or widgets: labs/views/<module>.py (notebook side, never
imported here); if the lesson states behaviour: labs/claims/<module>.py (found by itself).
A lesson module imports the harness from labs.harness.ranks (exercises, tracing, measure)
and labs.harness.commands.cli, nothing above it. Nothing else lists the lessons.
Delete this paragraph once copied.
"""
from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo


def partners(rank, world_size):
    """A worker function: the notebook runs it with `launch(lab.partners, world_size=3)`.
    Workers import it by name, so it lives at module level; it is called as
    fn(rank, world_size, *args) with the gloo group ready, and returns plain data or tensors."""
    partner = rank ^ 1
    return f"rank {rank} swaps with rank {partner}" if partner < world_size \
        else f"rank {rank} has no partner"


@exercise
def swap_with_partner(tensor):
    """Ranks pair up, 0-1, 2-3, ...: return your partner's `tensor` as a new tensor, and
    leave yours unchanged. Post the send and the receive in ONE dist.batch_isend_irecv
    call and wait for both. With an odd world size the last rank has no partner: it
    returns a copy of its own tensor.

    Hint: your partner is `dist.get_rank() ^ 1`; receive into `torch.empty_like(tensor)`.
    """
    raise todo("notebook NN, 'Exercise 1: swap with your partner'")


def demo(rank, world_size):
    """What `python -m labs.<module>` and torchrun print, one line per rank."""
    return partners(rank, world_size)


if __name__ == "__main__":
    cli.main(demo)
