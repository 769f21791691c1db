"""``python -m agents.alphaproof.keys DIR``: make the CurveZMQ keys of a distributed run (see distributed/keys.py)."""
from agents.alphaproof.distributed.keys import main, make_keys  # noqa: F401
from leangym.cli import run_cli

if __name__ == "__main__":
    run_cli(main)
