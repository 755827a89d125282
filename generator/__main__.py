"""`python -m p2gen ...`: the `p2gen` command (generator/cli.py), for an environment
whose scripts directory is not on PATH."""
from .cli import main

if __name__ == "__main__":
    main(prog_name="p2gen")
