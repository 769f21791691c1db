"""The AlphaProof tools' files under faults: resumed TensorBoard logs and replay buffer, checkpoints
that would be overwritten or cannot be read, bad training-row and theorem files, a statement nested
too deeply for prove, counts below one."""
from __future__ import annotations

import json
import struct
import zipfile

import pytest

from agents.alphaproof import checkpoint
from agents.alphaproof import train as train_mod
from leangym.cli import run_cli

from test_alphaproof_faults import TRIVIAL, tiny_args


# ---------------------------------------------------------------------------- 4, 8. resume
def _scalars(logdir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def test_resume_keeps_the_logged_history_and_applies_a_new_replay_size(tmp_path, capsys):
    args = tiny_args(tmp_path, "run", iterations=1, warmup_steps=20, warmup_theorems=8, sft_mix=0.25)
    train_mod.train(args)
    resume = str(tmp_path / "run" / "ck")
    train_mod.train(tiny_args(tmp_path, "run", iterations=2, warmup_steps=20, sft_mix=0.25, replay_size=3,
                              resume=resume))
    tb = tmp_path / "run" / "tb"
    assert _scalars(tb, "train/loss") == [1, 2]  # the checkpointed iteration 1 survives the resume
    assert _scalars(tb / "warmup", "sft/loss") == [10, 20]  # and so does the warm start
    # 4 --> 3: the warning says the new size applies, and it does (the newest rows are kept)
    assert "--replay-size is 3" in capsys.readouterr().err
    replay = checkpoint.load(tmp_path / "run" / "ck" / "latest.pt")["replay"]
    assert replay["capacity"] == 3 and len(replay["rows"]) == 3


def test_replay_resize_keeps_the_newest_rows():
    from agents.alphaproof.replay import ReplayBuffer

    buf = ReplayBuffer(10)
    buf.add({"state": f"⊢ s{i}"} for i in range(8))
    small = ReplayBuffer(10)
    small.load_state_dict(buf.state_dict(), capacity=3)
    assert small.capacity == 3 and [r["state"] for r in small.rows] == ["⊢ s5", "⊢ s6", "⊢ s7"]


# ---------------------------------------------------------------------------- 5. overwriting a checkpoint
def _cli(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: main(argv))
    err = capsys.readouterr().err
    return e.value.code, err


def test_a_new_run_refuses_to_overwrite_another_runs_checkpoint(tmp_path, capsys):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "latest.pt").write_bytes(b"an earlier run")
    argv = ["--checkpoint-dir", str(ck), "--logdir", "", "--no-progress", "--actors", "1", "--iterations", "0",
            "--warmup-steps", "0", "--sft-mix", "0", "--eval-every", "0"]
    code, err = _cli(train_mod.main, argv, capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert "--resume" in err and "--overwrite" in err and str(ck / "latest.pt") in err
    assert (ck / "latest.pt").read_bytes() == b"an earlier run"
    out = train_mod.train(tiny_args(tmp_path, "x", checkpoint_dir=str(ck), iterations=0, overwrite=True))
    assert out["iteration"] == 0 and checkpoint.load(ck / "latest.pt")["progress"]["warm_started"]


def test_sft_refuses_to_overwrite_its_out_file(tmp_path, capsys):
    from agents.alphaproof.sft import main as sft_main

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"state": "⊢ p", "tactic": "exact hp", "steps_to_go": 1}) + "\n", encoding="utf-8")
    out = tmp_path / "sft.pt"
    out.write_bytes(b"an earlier net")
    code, err = _cli(sft_main, ["--data", str(rows), "--out", str(out), "--steps", "1"], capsys)
    assert code == 2 and err.startswith("error: ") and "--overwrite" in err and str(out) in err
    assert out.read_bytes() == b"an earlier net"


# ---------------------------------------------------------------------------- 6. unreadable checkpoints
def _damaged(tmp_path, kind):
    from agents.alphaproof.policy import PolicyValueNet

    good = checkpoint.save(tmp_path / "good.pt", {"net": PolicyValueNet.create("tiny", max_tactic_tokens=4)
                                                  .to_payload()})
    data = bytearray(good.read_bytes())
    if kind == "empty":
        data = b""
    elif kind == "truncated":
        data = data[:len(data) // 3]
    elif kind == "text":
        data = b"hello\n"
    elif kind == "bit-flipped":  # a byte of the pickled structure (zip entry data.pkl)
        info = next(i for i in zipfile.ZipFile(good).infolist() if i.filename.endswith("data.pkl"))
        name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
        data[info.header_offset + 30 + name_len + extra_len + 10] ^= 0xFF
    bad = tmp_path / f"{kind}.pt"
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize("kind", ["empty", "truncated", "text", "bit-flipped"])
def test_an_unreadable_checkpoint_is_one_error_naming_the_file(tmp_path, kind, capsys):
    from agents.alphaproof.policy import PolicyValueNet
    from agents.alphaproof.prove import main as prove_main

    bad = _damaged(tmp_path, kind)
    for load in (checkpoint.load, PolicyValueNet.load):
        with pytest.raises(ValueError, match="not a readable checkpoint") as e:
            load(str(bad))
        assert str(e.value).startswith(f"{bad}: ")
    code, err = _cli(prove_main, ["--checkpoint", str(bad), "--theorem", TRIVIAL], capsys)
    assert code == 2 and err.startswith(f"error: {bad}: not a readable checkpoint") and err.count("\n") == 1


# ---------------------------------------------------------------------------- 7. bad input files
GOOD_ROW = json.dumps({"state": "⊢ p", "tactic": "exact hp", "steps_to_go": 1})


@pytest.mark.parametrize("line, why", [
    ('{"state": "⊢ p", "tactic": "exact hp", "steps_to_go": "two"}', "'steps_to_go' must be a whole number >= 0"),
    ('{"state": "⊢ p", "tactic": "exact hp", "steps_to_go": -1}', "'steps_to_go' must be a whole number >= 0"),
    ('{"state": "⊢ p", "tactic": "exact hp", "steps_to_go": true}', "'steps_to_go' must be a whole number >= 0"),
    ('{"state": "⊢ p", "tactic": "exact hp", "steps_to_go": 1.5}', "'steps_to_go' must be a whole number >= 0"),
    ('{"state": "⊢ p", "tactic": 5}', "'tactic' must be a string or null"),
    ('{"state": "⊢ p", "value": "high"}', "'value' must be a finite number"),
    ('{"state": "⊢ p", "value": NaN}', "'value' must be a finite number"),
    ('{"tactic": "exact hp"}', "expected an object with a string 'state'"),
    ('{"state": "⊢ p"}', "the row teaches nothing"),  # no tactic, no steps_to_go, no value
    ('{"state": "⊢ p", "tactic": ""}', "the row teaches nothing"),
    ('{"state": "⊢ p", ', "not JSON"),
    (b'{"state": "\xff p"}', "not UTF-8"),
])
def test_training_rows_are_checked_when_loaded_and_errors_name_the_line(tmp_path, line, why):
    from agents.alphaproof.data import load_rows

    path = tmp_path / "rows.jsonl"
    bad = line if isinstance(line, bytes) else line.encode("utf-8")
    path.write_bytes(GOOD_ROW.encode("utf-8") + b"\n\n" + bad + b"\n" + GOOD_ROW.encode("utf-8") + b"\n")
    with pytest.raises(ValueError) as e:
        load_rows(str(path))
    assert str(e.value).startswith(f"{path}:3: ") and why in str(e.value)


def test_good_rows_pass_the_check():
    from agents.alphaproof.data import row_problem

    for row in ({"state": "⊢ p", "tactic": "exact hp", "steps_to_go": 0}, {"state": "⊢ p", "steps_to_go": None},
                {"state": "⊢ p", "tactic": None, "value": 0.5}, {"state": "⊢ p", "value": 1}):
        assert row_problem(row) is None, row


@pytest.mark.parametrize("line, why", [
    ('{"name": "t"}', ":3: missing field 'formal_statement'"),
    (json.dumps({"formal_statement": TRIVIAL, "difficulty": "hard"}), "'difficulty' must be a whole number"),
    (json.dumps({"formal_statement": TRIVIAL, "proof": 5}), "'proof' must be a list of tactic strings"),
    ('[1, 2]', ":3: expected a JSON object"),
    ('{"formal_statement": ', ":3: invalid JSON"),
    (b'{"formal_statement": "\xfe"}', "not UTF-8"),
])
def test_a_bad_theorem_row_names_its_file_and_line_or_theorem(tmp_path, line, why):
    from agents.alphaproof.theorem_source import TheoremFileSource

    path = tmp_path / "thms.jsonl"
    good = json.dumps({"name": "t", "formal_statement": TRIVIAL}).encode("utf-8")
    bad = line if isinstance(line, bytes) else line.encode("utf-8")
    path.write_bytes(good + b"\n\n" + bad + b"\n")
    with pytest.raises(ValueError) as e:
        TheoremFileSource(str(path))
    assert str(e.value).startswith(f"{path}") and why in str(e.value), e.value  # (a field: the theorem's name)


def test_train_reads_every_theorem_file_the_benchmark_reads(tmp_path):
    """--theorems takes what benchmark --dataset takes (one loader): a JSON array and a .lean file too."""
    from agents.alphaproof.theorem_source import TheoremFileSource

    rows = [{"name": f"t{i}", "formal_statement": f"theorem t{i} (p : Prop) (h{i} : p) : p := by sorry",
             "difficulty": i % 2} for i in range(4)]
    (tmp_path / "th.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "th.lean").write_text("\n\n".join(r["formal_statement"] for r in rows), encoding="utf-8")
    for name in ("th.json", "th.lean"):
        source = TheoremFileSource(str(tmp_path / name), heldout_size=1)
        assert len(source.train) == 3 and len(source.test) == 1, name
    assert TheoremFileSource(str(tmp_path / "th.json"), heldout_size=1).levels == [0, 1]


# ---------------------------------------------------------------------------- minor: prove
def test_prove_says_a_statement_is_nested_too_deeply(tmp_path, capsys):
    from agents.alphaproof.policy import PolicyValueNet
    from agents.alphaproof.prove import main as prove_main

    PolicyValueNet.create("tiny", seed=0, max_tactic_tokens=4).save(str(tmp_path / "net.pt"))
    deep = "theorem t (p : Prop) : " + "p → " * 3000 + "p := by sorry"
    code, err = _cli(prove_main, ["--checkpoint", str(tmp_path / "net.pt"), "--theorem", deep], capsys)
    assert code == 2 and err.startswith("error: the statement is nested too deeply") and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["actors", "sims", "eval_size"])
def test_counts_below_one_are_clear_errors(tmp_path, flag):
    with pytest.raises(ValueError, match=f"--{flag.replace('_', '-')} must be at least 1"):
        train_mod.train(tiny_args(tmp_path, "zero", **{flag: 0}))


def test_a_theorem_files_warm_start_sample_follows_its_seed(tmp_path):
    """reference(n, seed) used to ignore the seed (always the file's first n): the generator's source draws."""
    from agents.alphaproof.theorem_source import TheoremFileSource

    rows = [{"name": f"t{i}", "formal_statement": f"theorem t{i} (p : Prop) (h{i} : p) : p := by sorry",
             "proof": [f"exact h{i}"], "split": "train"} for i in range(12)]
    (tmp_path / "th.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    source = TheoremFileSource(str(tmp_path / "th.jsonl"), heldout_size=2)
    names = {seed: [t.theorem.name for t in source.reference(4, seed)] for seed in range(4)}
    assert all(len(v) == 4 for v in names.values()) and len({tuple(v) for v in names.values()}) > 1
    assert names[0] == [t.theorem.name for t in source.reference(4, 0)]
    assert sorted(t.theorem.name for t in source.reference(50, 1)) == sorted(t.theorem.name for t in source.train)
