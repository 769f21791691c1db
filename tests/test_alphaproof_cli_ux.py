"""What a new user of the AlphaProof command lines meets (the UX audit's findings 2, 3, 9, 10): ``--resume DIR``
goes on writing the run where it lives, ``--max-minutes`` says what it covers and shows the time left, sft checks
its inputs before its output, ``--help`` shows defaults and the ``python -m`` usage, ``prove --checkpoint`` takes a
run's directory, and a ``--theorems`` file that shrinks the held-out set says so."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.alphaproof import checkpoint
from agents.alphaproof import prove as prove_mod
from agents.alphaproof import sft as sft_mod
from agents.alphaproof import train as train_mod
from agents.alphaproof import train_args
from agents.alphaproof.theorem_source import HeldOut, TheoremFileSource
from leangym.cli import run_cli

REPO = Path(__file__).resolve().parents[1]
TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"
# a tiny run: no warm start, no evaluation, searches of a few Lean calls
TINY = ["--actors", "1", "--sims", "2", "--lean-calls", "4", "--num-tactics", "2", "--max-tactic-tokens", "8",
        "--batch-size", "4", "--learn-steps", "1", "--warmup-steps", "0", "--sft-mix", "0", "--eval-every", "0",
        "--eval-size", "2"]


def _cli(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: main(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _iteration(ck: Path) -> int:
    return checkpoint.load(ck / "latest.pt")["progress"]["iteration"]


def _events(logdir: Path) -> int:
    return len(list(logdir.glob("events.out.tfevents.*")))


def _help(main, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A finished one-iteration run in ``tmp_path/run`` (ck, tb), and a working directory elsewhere."""
    ck, tb = tmp_path / "run" / "ck", tmp_path / "run" / "tb"
    train_mod.main([*TINY, "--iterations", "1", "--no-progress", "--checkpoint-dir", str(ck), "--logdir", str(tb)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return ck, tb, elsewhere


# ---------------------------------------------------------------------------- 2. --resume DIR
def test_resume_dir_keeps_saving_and_logging_where_the_run_lives(run, capsys):
    ck, tb, elsewhere = run
    assert _iteration(ck) == 1 and _events(tb) == 1
    capsys.readouterr()
    train_mod.main([*TINY, "--iterations", "2", "--no-progress", "--resume", str(ck)])
    out, err = capsys.readouterr()
    assert _iteration(ck) == 2 and _events(tb) == 2  # the run went on in its own directories ...
    assert list(elsewhere.iterdir()) == []  # ... not in ./checkpoints/alphaproof and ./runs/alphaproof
    assert f"checkpoint: {ck / 'latest.pt'}" in out
    assert f"checkpoints in {ck} and TensorBoard logs in {tb.resolve()}" in err
    assert checkpoint.load(ck / "latest.pt")["logdir"] == str(tb.resolve())


def test_explicit_checkpoint_dir_and_logdir_still_win_over_the_resumed_runs(run, capsys):
    ck, tb, elsewhere = run
    train_mod.main([*TINY, "--iterations", "2", "--no-progress", "--resume", str(ck),
                    "--checkpoint-dir", "ck2", "--logdir", "tb2"])
    assert _iteration(ck) == 1 and _events(tb) == 1  # the resumed run's files untouched
    assert _iteration(elsewhere / "ck2") == 2 and _events(elsewhere / "tb2") == 1
    assert "TensorBoard logs in" not in capsys.readouterr().err  # nothing was taken from the checkpoint


def test_an_older_checkpoint_without_its_logdir_logs_to_the_default_and_says_so(run, capsys):
    ck, tb, elsewhere = run
    state = checkpoint.load(ck / "latest.pt")
    del state["logdir"], state["format"]  # as an older version wrote it
    checkpoint.save(ck / "latest.pt", state)
    capsys.readouterr()
    train_mod.main([*TINY, "--iterations", "2", "--no-progress", "--resume", str(ck)])
    notes = [line for line in capsys.readouterr().err.splitlines() if "does not record where its run logged" in line]
    assert len(notes) == 1 and train_args.DEFAULT_LOGDIR in notes[0] and "--logdir" in notes[0]
    assert _iteration(ck) == 2  # the checkpoint still goes on where it lives
    runs = list((elsewhere / train_args.DEFAULT_LOGDIR).iterdir())  # a folder of its own
    assert len(runs) == 1 and _events(runs[0]) == 1 and _events(tb) == 1


def test_the_interrupt_message_has_its_own_line_and_its_advice_works(tmp_path, monkeypatch, capsys):
    ck, tb = tmp_path / "ck", tmp_path / "tb"
    real, calls = train_mod.run_searches, []

    def interrupted_in_the_second_iteration(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(train_mod, "run_searches", interrupted_in_the_second_iteration)
    code, _, err = _cli(train_mod.main, [*TINY, "--iterations", "3", "--checkpoint-dir", str(ck), "--logdir", str(tb)],
                        capsys)
    assert code == 130
    advice = f"stopped; the last checkpoint is {ck / 'latest.pt'}: go on with --resume {ck}"
    assert advice in err.split("\n"), err  # a line of its own, not glued to the progress bar
    monkeypatch.setattr(train_mod, "run_searches", real)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    train_mod.main([*TINY, "--iterations", "3", "--no-progress", "--resume", str(ck)])  # the advice, literally
    assert _iteration(ck) == 3 and _events(tb) == 2 and list(elsewhere.iterdir()) == []


# ---------------------------------------------------------------------------- 3. --max-minutes
def test_max_minutes_says_the_final_evaluation_follows(capsys):
    text = " ".join(_help(train_mod.main, capsys).split())
    assert "the final held-out evaluation (--eval-size searches) and the save come after the limit" in text
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "for 10 minutes (warm start included; the final held-out evaluation and save come after" in readme


def test_the_self_play_bar_shows_the_time_left_under_max_minutes(tmp_path, capsys):
    argv = [*TINY, "--iterations", "1", "--checkpoint-dir", str(tmp_path / "ck"), "--logdir", ""]
    code, _, err = _cli(train_mod.main, [*argv, "--max-minutes", "30"], capsys)
    assert code == 0 and "self-play: 1it" in err and ", left=29:" in err, err
    code, _, err = _cli(train_mod.main, [*argv, "--overwrite"], capsys)  # no limit: a total and an ETA instead
    assert code == 0 and "1/1" in err and "left=" not in err, err


# ---------------------------------------------------------------------------- 9. sft: inputs before the output
def test_sft_reports_a_missing_data_file_before_an_existing_out(tmp_path, capsys):
    out = tmp_path / "sft.pt"
    out.write_bytes(b"an earlier net")
    missing = tmp_path / "nonexist.jsonl"
    code, _, err = _cli(sft_mod.main, ["--data", str(missing), "--out", str(out), "--steps", "1"], capsys)
    assert code == 2 and err.startswith(f"error: --data {missing}: no such file") and err.count("\n") == 1, err
    assert "overwrite" not in err and out.read_bytes() == b"an earlier net"
    code, _, err = _cli(sft_mod.main, ["--data", str(tmp_path), "--out", str(out), "--steps", "1"], capsys)
    assert code == 2 and f"--data {tmp_path}: a directory" in err, err
    code, _, err = _cli(sft_mod.main, ["--data", str(_rows_file(tmp_path)), "--out", str(out), "--steps", "1",
                                       "--init", str(missing)], capsys)
    assert code == 2 and f"--init {missing}: no such file" in err, err
    code, _, err = _cli(sft_mod.main, ["--data", str(_rows_file(tmp_path)), "--out", str(out), "--steps", "1",
                                       "--init", str(out), "--size", "small"], capsys)
    assert code == 2 and "--init's net keeps its own size and tokenizer" in err, err  # was: --size ignored


def test_train_reports_a_missing_theorem_file_before_an_existing_checkpoint(tmp_path, capsys):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "latest.pt").write_bytes(b"another run's checkpoint")
    missing = tmp_path / "nonexist.jsonl"
    code, _, err = _cli(train_mod.main, ["--theorems", str(missing), "--checkpoint-dir", str(ck)], capsys)
    assert code == 2 and err.startswith(f"error: --theorems {missing}: no such file") and "overwrite" not in err, err


@pytest.mark.parametrize("spec", ["minif2f", "minif2f:/some/copy", "proplogic-heldout:8", "https://host/x.jsonl", "DIR"])
def test_train_s_early_check_lets_every_dataset_form_through(tmp_path, spec):
    """--theorems takes what --dataset takes: the check before any work refused all but a local file."""
    spec = str(tmp_path) if spec == "DIR" else spec
    from agents.alphaproof.train_args import Args, check_args

    check_args(Args(theorems=spec))


def _rows_file(tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"state": "⊢ p", "tactic": "exact hp", "steps_to_go": 1}) + "\n", encoding="utf-8")
    return rows


# ---------------------------------------------------------------------------- 10. --help, usage, prove, held-out
def test_prove_and_sft_help_show_defaults(capsys):
    prove = " ".join(_help(prove_mod.main, capsys).split())
    assert "MCTS simulations (at least 1; default: 4 per Lean call of --lean-calls)" in prove
    assert "(default: None)" not in prove
    assert "1 no proof was found" in prove  # the exit status
    sft = " ".join(_help(sft_mod.main, capsys).split())
    assert "optimizer steps (at least 1) (default: 1000)" in sft and "(default: checkpoints/sft.pt)" in sft
    assert "(default: None)" not in sft


def test_every_train_flag_has_help():
    bare = [a.option_strings for a in train_args.build_parser()._actions if not (a.help or "").strip()]
    assert bare == []


@pytest.mark.parametrize("module, prog", [
    ("agents.alphaproof.train", "python -m agents.alphaproof.train"),
    ("agents.alphaproof.prove", "python -m agents.alphaproof.prove"),
    ("agents.alphaproof.sft", "python -m agents.alphaproof.sft"),
    ("leangym.datasets.proplogic", "python -m leangym.datasets.proplogic"),
    ("agents.alphaproof.train_tokenizer", "python -m agents.alphaproof.train_tokenizer"),
])
def test_usage_lines_name_the_command_the_readme_uses(module, prog, capsys):
    import importlib

    assert _help(importlib.import_module(module).main, capsys).startswith(f"usage: {prog} ")


def test_prove_takes_a_run_directory_and_names_what_to_pass(tmp_path, capsys):
    ck = tmp_path / "ck"
    train_mod.main([*TINY, "--iterations", "0", "--no-progress", "--checkpoint-dir", str(ck), "--logdir", ""])
    argv = ["--theorem", TRIVIAL, "--sims", "2", "--lean-calls", "4"]
    code, _, err = _cli(prove_mod.main, ["--checkpoint", str(ck), *argv], capsys)
    assert code in (0, 1), err  # searched (an untrained net may find nothing), not refused
    assert prove_mod.AlphaProofProver(checkpoint=str(ck)).net is not None
    (tmp_path / "empty").mkdir()
    for given, why in [(tmp_path / "nope.pt", "no such file"), (tmp_path / "empty", "a directory without a latest.pt")]:
        code, _, err = _cli(prove_mod.main, ["--checkpoint", str(given), *argv], capsys)
        assert code == 2 and err.startswith(f"error: --checkpoint {given}: {why}; pass "), err
        assert err.count("\n") == 1 and "--checkpoint-dir" in err and "Errno" not in err


def _theorems(tmp_path, n, test=0):
    path = tmp_path / "thms.jsonl"
    rows = [{"name": f"t{i}", **({"split": "test"} if i < test else {}),  # n distinct statements
             "formal_statement": f"theorem t{i} (p : Prop) (hp : p) : p ∨ {'p ∨ ' * i}p := by sorry"} for i in range(n)]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return str(path)


def test_a_theorem_file_that_shrinks_the_held_out_set_says_why(tmp_path, capsys):
    path = _theorems(tmp_path, 10)
    assert len(TheoremFileSource(path, heldout_size=8).heldout(8)) == 5
    err = capsys.readouterr().err
    assert err == (f"held-out: 5 theorems of {path}, not --eval-size 8: at most half of its 10 distinct statements "
                   "are held out, the rest are to train on\n")
    TheoremFileSource(path, heldout_size=5)  # as many as asked for: nothing to say
    TheoremFileSource(path, heldout_size=8, held_out=HeldOut(("x",)))  # a resumed run's split: resume.py speaks
    assert capsys.readouterr().err == ""
    path = _theorems(tmp_path, 10, test=3)
    assert len(TheoremFileSource(path, heldout_size=8).heldout(8)) == 3
    assert capsys.readouterr().err == (f'held-out: 3 theorems of {path}, not --eval-size 8: only those are marked '
                                       '"split": "test"\n')
