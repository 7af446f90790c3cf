"""Lesson 11's exercise as a script: torchrun runs it, `labs.jobs.ring_job` is the job.

    torchrun --standalone --nproc-per-node=4 labs/scripts/ring_job.py --numel 6

Every rank prints `rank R result: [...]`, the sum over ranks of [10R, 10R + 1, ...].
Write the body of `ring_job` in labs/jobs.py (notebook 11, "Exercise").
"""
import argparse

from torch.distributed.elastic.multiprocessing.errors import record

from labs.jobs import ring_job


@record
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=6, help="elements per rank")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="process-group timeout in seconds")
    args = parser.parse_args()
    ring_job(args.numel, args.timeout)


if __name__ == "__main__":
    main()
