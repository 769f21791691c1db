"""Command-line tools: a user's mistake is one line and status 2; a bug keeps its traceback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leangym.cli import run_cli
from leangym.theorem import Theorem

REPO = Path(__file__).resolve().parents[1]  # the tools run from the repository root, wherever pytest runs


def _exit_status(main) -> int:
    with pytest.raises(SystemExit) as e:
        run_cli(main)
    return e.value.code


def test_user_errors_are_one_line_and_status_2(capsys):
    def missing_file():
        open("/nonexistent/rows.jsonl")

    def bad_theorem():
        Theorem("hello")

    for main in (missing_file, bad_theorem):
        assert _exit_status(main) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "Traceback" not in err and err.count("\n") == 1


def test_status_and_interrupts():
    assert _exit_status(lambda: None) == 0
    assert _exit_status(lambda: 1) == 1

    def interrupted():
        raise KeyboardInterrupt

    assert _exit_status(interrupted) == 130


def test_a_bug_keeps_its_traceback():
    def bug():
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        run_cli(bug)


def test_the_tools_use_it(tmp_path):
    """A wrong path given to a real tool: one line, status 2."""
    nope = str(tmp_path / "nope.jsonl")
    for argv in (["agents.alphaproof.sft", "--data", nope],
                 ["scripts.train_tokenizer", "--input", nope, "--output", str(tmp_path / "tok.json")]):
        proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "nope.jsonl" in proc.stderr, proc.stderr


def test_tokenizer_symbol_order_does_not_depend_on_the_hash_seed():
    # the order of the added symbols decides their ids: `python scripts/train_tokenizer.py` must rebuild
    # the shipped asset exactly, whatever PYTHONHASHSEED is
    code = "from agents.alphaproof.tokenizer import _ADDED; print(_ADDED)"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and outs.pop().startswith("[")
