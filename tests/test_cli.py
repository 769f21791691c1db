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
                 ["agents.alphaproof.train_tokenizer", "--input", nope, "--output", str(tmp_path / "tok.json")]):
        proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "nope.jsonl" in proc.stderr, proc.stderr


def test_benchmark_errors_go_through_run_cli_so_leangym_debug_shows_their_traceback(tmp_path, monkeypatch):
    """scripts.benchmark used to print its dataset, agent and server errors itself: LEANGYM_DEBUG showed nothing."""
    nope = str(tmp_path / "nope.jsonl")
    argv = ["run", "--agent", "random", "--dataset", nope, "--out", str(tmp_path / "out.jsonl")]
    for debug in ("", "1"):
        monkeypatch.setenv("LEANGYM_DEBUG", debug)
        proc = subprocess.run([sys.executable, "-m", "scripts.benchmark", *argv], capture_output=True, text=True,
                              timeout=120, cwd=REPO, env={**os.environ})
        assert proc.returncode == 2 and proc.stderr.rstrip().endswith(f"error: {nope}: no such file"), proc.stderr
        assert ("Traceback" in proc.stderr) == bool(debug), proc.stderr


def test_every_python_m_tool_ends_with_run_cli():
    """The module docstring's promise, checked on the files: each tool's ``__main__`` block runs
    ``run_cli(main)`` (a tool without it turns every user mistake into a traceback)."""
    tools = []
    for folder in ("leangym", "agents", "baselines", "scripts", "benchmarks"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if 'if __name__ == "__main__":' in text:
                tools.append(path)
                block = text.split('if __name__ == "__main__":', 1)[1]
                assert "run_cli(main)" in block, f"{path.relative_to(REPO)}: __main__ does not call run_cli(main)"
    assert len(tools) >= 10


def test_generator_and_sim_server_mistakes_are_one_line(tmp_path):
    import socket

    for argv in (["-n", "5", "--difficulty", "9", "-o", str(tmp_path / "g.jsonl")],
                 ["-n", "-3", "-o", str(tmp_path / "g.jsonl")],
                 ["-n", "3", "-o", str(tmp_path / "missing" / "g.jsonl")]):
        proc = subprocess.run([sys.executable, "-m", "leangym.datasets.proplogic", *argv], capture_output=True,
                              text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
        assert "Traceback" not in proc.stderr
    with socket.socket() as taken:  # a port something else listens on
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "leangym.sim.server", "--port", str(port)],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.startswith("error: cannot listen"), proc.stderr
    assert "--port" in proc.stderr


def test_tokenizer_symbol_order_does_not_depend_on_the_hash_seed():
    # the order of the added symbols decides their ids: `python agents/alphaproof/train_tokenizer.py` must rebuild
    # the shipped asset exactly, whatever PYTHONHASHSEED is
    code = "from agents.alphaproof.tokenizer import _ADDED; print(_ADDED)"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and outs.pop().startswith("[")


TOOLS = ["leangym.datasets.proplogic", "leangym.datasets.natarith", "leangym.sim.server", "agents.alphaproof.train", "agents.alphaproof.sft",
         "agents.alphaproof.prove", "scripts.benchmark", "baselines.maskable_ppo", "agents.alphaproof.train_tokenizer"]


@pytest.mark.parametrize("module", TOOLS)
def test_a_malformed_flag_is_one_error_line_naming_help(module, capsys):
    import importlib

    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as e:
        main(["--no-such-flag"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "usage:" not in err, err
    assert err.startswith("error: ") and err.rstrip().endswith("--help)"), err  # (or a missing required flag)


def test_a_bad_value_names_its_flag(capsys, tmp_path):
    from leangym.datasets import proplogic as generator

    for argv, says in ((["-n", "-5"], "-n must be 0 or more"),
                       (["--heldout", "--seed", "3"], "--heldout writes the fixed evaluation set")):
        with pytest.raises(SystemExit):
            generator.main([*argv, "-o", str(tmp_path / "g.jsonl")])
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "g.jsonl").exists()


def test_maskable_ppo_checks_its_flags_and_save_path_before_training(tmp_path):
    from baselines import maskable_ppo

    def refused(*argv):
        with pytest.raises(ValueError) as e:
            maskable_ppo.main(list(argv))
        return str(e.value)

    assert "--n-envs must be at least 1" in refused("--save", str(tmp_path / "m"), "--n-envs", "0")
    assert "--timesteps must be at least 1" in refused("--save", str(tmp_path / "m"), "--timesteps", "0")
    assert "is a directory" in refused("--save", str(tmp_path))  # SB3 would write tmp_path.zip beside it
    assert "no directory" in refused("--save", str(tmp_path / "nowhere" / "m"))
    (tmp_path / "m.zip").write_bytes(b"an earlier model")
    assert "pass --overwrite" in refused("--save", str(tmp_path / "m"))


def test_flags_are_not_abbreviated(capsys):
    from agents.alphaproof import train

    with pytest.raises(SystemExit):
        train.main(["--actor", "4"])  # not --actors
    assert "unrecognized arguments: --actor" in capsys.readouterr().err
