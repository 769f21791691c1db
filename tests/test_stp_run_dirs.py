"""agents.stp.train keeps its runs as agents.alphaproof.train does: each run a folder of its own
(``checkpoints/stp/DATE-TIME``, logs in ``runs/stp/DATE-TIME``), ``latest`` links the run saved last,
``--resume`` alone goes on with it, and a named ``--checkpoint-dir`` of another run is refused."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.stp import train as stp_train
from leangym.cli import run_cli

# a tiny run: 4 seeds, one round of one attempt, searches of a few Lean calls, no evaluation
TINY = ["--seeds", "4", "--rounds", "1", "--candidates", "1", "--attempts", "1", "--max-steps", "2",
        "--seed-batch", "1", "--sims", "2", "--lean-calls", "4", "--warmup-steps", "1",
        "--conjecturer-warmup-steps", "1", "--conjecturer-corpus", "2", "--learn-steps", "1", "--conjecturer-steps", "1",
        "--batch-size", "4",
        "--eval-size", "0", "--no-progress"]


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: stp_train.main(argv))
    out = capsys.readouterr()
    return e.value.code, out.err


def _runs(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if not d.is_symlink())


def _iterations(run_dir: Path) -> int:
    return json.loads((run_dir / "history.json").read_text())["iterations"]


def test_two_runs_two_folders_then_resume_the_newest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the same command twice
        code, err = _cli([*TINY, "--iterations", "1"], capsys)
        assert code == 0, err
    ckpts = tmp_path / "checkpoints" / "stp"
    first, second = _runs(ckpts)
    assert (ckpts / "latest").resolve() == second.resolve()
    assert [d.name for d in _runs(tmp_path / "runs" / "stp")] == [first.name, second.name]  # TensorBoard: one each
    assert all((d / "state.pt").is_file() and (d / "prover.pt").is_file() for d in (first, second))
    assert not list(tmp_path.rglob("*.lock"))  # the runs' locks went with them

    code, err = _cli([*TINY, "--iterations", "2", "--resume"], capsys)  # --resume alone: the newest run
    assert code == 0, err
    assert (_iterations(first), _iterations(second)) == (1, 2) and _runs(ckpts) == [first, second]
    assert f"checkpoints in {Path('checkpoints/stp') / second.name}" in err  # it said where it went on
    saved = json.loads((second / "history.json").read_text())["args"]
    assert Path(saved["logdir"]).resolve() == (tmp_path / "runs" / "stp" / second.name).resolve()  # logged there too
    os.utime(second / "state.pt", (1e9, 1e9))  # now `first` is the run saved last
    code, err = _cli([*TINY, "--iterations", "2", "--resume", "latest"], capsys)
    assert code == 0 and (_iterations(first), _iterations(second)) == (2, 2), err
    code, err = _cli([*TINY, "--iterations", "3", "--resume", str(second)], capsys)  # --resume DIR: that run
    assert code == 0 and (_iterations(first), _iterations(second)) == (2, 3), err
    assert _runs(ckpts) == [first, second] and len(_runs(tmp_path / "runs" / "stp")) == 2


def test_resume_with_no_run_yet_says_so_and_a_failed_start_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = _cli([*TINY, "--resume"], capsys)
    assert code == 2 and "--resume latest: no checkpoint there" in err, err
    code, err = _cli([*TINY, "--theorems", str(tmp_path / "missing.jsonl")], capsys)
    assert code == 2 and "missing.jsonl" in err, err
    ckpts = tmp_path / "checkpoints" / "stp"
    assert not ckpts.exists() or _runs(ckpts) == []  # the stopped run's folder went with it


def test_a_named_checkpoint_dir_refuses_another_runs_state_without_overwrite(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    ck = tmp_path / "mine"
    argv = [*TINY, "--iterations", "0", "--checkpoint-dir", str(ck), "--logdir", ""]
    assert _cli(argv, capsys)[0] == 0 and (ck / "state.pt").is_file()
    os.utime(ck / "state.pt", (1e9, 1e9))  # (so that a rewrite shows)
    code, err = _cli(argv, capsys)
    assert code == 2 and "--overwrite" in err and "each run gets a folder of its own" in err, err
    assert (ck / "state.pt").stat().st_mtime == 1e9  # nothing was written
    code, err = _cli([*argv, "--overwrite"], capsys)
    assert code == 0 and (ck / "state.pt").stat().st_mtime != 1e9, err
    assert not (tmp_path / "checkpoints").exists()  # a named folder: no run folder, no `latest` link
