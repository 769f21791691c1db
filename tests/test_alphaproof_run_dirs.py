"""The README's first command runs again and again: each run saves into a folder of its own
(``checkpoints/alphaproof/DATE-TIME``, logs in ``runs/alphaproof/DATE-TIME``), ``latest`` links the
run saved last, ``--resume`` alone goes on with it, and ``prove --checkpoint latest`` uses it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.alphaproof import checkpoint
from agents.alphaproof import prove as prove_mod
from agents.alphaproof import train as train_mod
from leangym.cli import run_cli

TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"
# a tiny run: no warm start, no evaluation, searches of a few Lean calls
TINY = ["--actors", "1", "--sims", "2", "--lean-calls", "4", "--num-tactics", "2", "--max-tactic-tokens", "8",
        "--batch-size", "4", "--learn-steps", "1", "--warmup-steps", "0", "--sft-mix", "0", "--eval-every", "0",
        "--eval-size", "2", "--no-progress"]


def _cli(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: main(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _runs(root: Path) -> list[Path]:
    return sorted(d for d in root.iterdir() if not d.is_symlink())


def _iteration(run_dir: Path) -> int:
    return checkpoint.load(run_dir / "latest.pt")["progress"]["iteration"]


def test_the_same_command_twice_then_resume_and_prove_the_newest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        code, out, err = _cli(train_mod.main, [*TINY, "--iterations", "1"], capsys)
        assert code == 0, err
    first, second = _runs(tmp_path / "checkpoints" / "alphaproof")
    assert len(_runs(tmp_path / "runs" / "alphaproof")) == 2  # TensorBoard: a folder per run too
    assert (tmp_path / "checkpoints" / "alphaproof" / "latest").resolve() == second.resolve()
    assert f"checkpoint: {Path('checkpoints/alphaproof') / second.name / 'latest.pt'}" in out
    assert not [p for p in tmp_path.rglob("*lock*")]  # the runs' locks went with them

    code, out, err = _cli(train_mod.main, [*TINY, "--iterations", "2", "--resume"], capsys)  # --resume alone
    assert code == 0, err
    assert (_iteration(first), _iteration(second)) == (1, 2)  # the newest run went on, in its own folder
    assert _runs(tmp_path / "checkpoints" / "alphaproof") == [first, second]
    os.utime(second / "latest.pt", (1e9, 1e9))  # now `first` is the run saved last
    code, out, err = _cli(train_mod.main, [*TINY, "--iterations", "2", "--resume", "latest"], capsys)
    assert code == 0 and (_iteration(first), _iteration(second)) == (2, 2), err

    argv = ["--theorem", TRIVIAL, "--sims", "2", "--lean-calls", "4"]
    for spec in ("latest", "checkpoints/alphaproof/latest", "checkpoints/alphaproof", str(second)):
        code, _, err = _cli(prove_mod.main, ["--checkpoint", spec, *argv], capsys)
        assert code in (0, 1), (spec, err)  # searched (an untrained net may find nothing), not refused


def test_resume_with_no_run_yet_says_so_and_a_failed_start_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(train_mod.main, [*TINY, "--resume"], capsys)
    assert code == 2 and "--resume latest: no checkpoint there" in err, err
    code, _, err = _cli(prove_mod.main, ["--checkpoint", "latest", "--theorem", TRIVIAL], capsys)
    assert code == 2 and f"no run in {tmp_path / 'checkpoints' / 'alphaproof'} has saved" in err, err
    code, _, err = _cli(train_mod.main, [*TINY, "--theorems", str(tmp_path / "missing.jsonl")], capsys)
    assert code == 2 and "missing.jsonl" in err, err
    assert not (tmp_path / "checkpoints" / "alphaproof").exists() or \
        _runs(tmp_path / "checkpoints" / "alphaproof") == []  # the stopped run's folder went with it


def test_a_named_checkpoint_dir_still_refuses_another_runs_checkpoint(tmp_path, capsys):
    ck = tmp_path / "mine"
    argv = [*TINY, "--iterations", "0", "--checkpoint-dir", str(ck), "--logdir", ""]
    assert _cli(train_mod.main, argv, capsys)[0] == 0
    code, _, err = _cli(train_mod.main, argv, capsys)
    assert code == 2 and "--overwrite" in err and "each run gets a folder of its own" in err, err
    assert _cli(train_mod.main, [*argv, "--overwrite"], capsys)[0] == 0


def test_a_run_started_with_relative_paths_resumes_from_another_directory(tmp_path, monkeypatch, capsys):
    import json

    from leangym.datasets.proplogic import generate

    first, elsewhere = tmp_path / "first", tmp_path / "elsewhere"
    first.mkdir(), elsewhere.mkdir()
    rows = [{"name": t.name, "formal_statement": t.theorem.formal_statement, "header": t.theorem.header}
            for t in generate(6, 0, (1, 2))]
    (first / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.chdir(first)
    code, _, err = _cli(train_mod.main, [*TINY, "--iterations", "1", "--theorems", "t.jsonl"], capsys)
    assert code == 0, err
    saved = checkpoint.load(first / "checkpoints" / "alphaproof" / "latest" / "latest.pt")["args"]
    assert saved["theorems"] == str(first / "t.jsonl")  # absolute: a resumed run finds it from anywhere
    monkeypatch.chdir(elsewhere)
    code, _, err = _cli(train_mod.main, [*TINY, "--iterations", "2", "--resume", str(first / "checkpoints" /
                                                                                        "alphaproof")], capsys)
    assert code == 0, err
    assert "--theorems is" not in err  # nothing changed: the same file
    assert _iteration(first / "checkpoints" / "alphaproof" / "latest") == 2


def test_a_named_set_stays_a_name_even_beside_a_folder_of_that_name(tmp_path, monkeypatch):
    from agents.alphaproof.train_args import parse_args

    monkeypatch.chdir(tmp_path)
    (tmp_path / "minif2f").mkdir()
    (tmp_path / "mine.jsonl").write_text("")
    assert parse_args(["--theorems", "minif2f"]).theorems == "minif2f"  # the loader's set, not ./minif2f
    assert parse_args(["--theorems", "mine.jsonl"]).theorems == str(tmp_path / "mine.jsonl")
