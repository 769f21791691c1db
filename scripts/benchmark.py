"""``python -m scripts.benchmark`` from a checkout: the harness's command line (:mod:`leangym.harness.benchmark`),
also installed as ``leangym-benchmark``."""
from leangym.cli import run_cli
from leangym.harness.benchmark import main

if __name__ == "__main__":
    run_cli(main)
