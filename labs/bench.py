"""`python -m labs.bench`: the course's benchmarks (the code lives in labs.harness.bench)."""
from labs.harness.bench import main

if __name__ == "__main__":
    main()
