"""`python -m labs.harness.schedule`: the checker's demo, locally or under torchrun."""
from labs.harness.commands import cli
from labs.harness.schedule.real_run import demo

if __name__ == "__main__":
    cli.main(demo)
