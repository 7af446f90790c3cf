"""`python -m labs.bench`: see labs/bench/__init__.py."""
from labs.bench.command import main

if __name__ == "__main__":
    main()
