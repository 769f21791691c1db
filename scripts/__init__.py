"""Entry points run from a checkout (``python -m scripts.NAME``); not installed: ``pip install`` gives
console scripts instead (``leangym-benchmark``, ``leangym-sim-server``)."""
