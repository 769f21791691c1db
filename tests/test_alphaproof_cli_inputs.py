"""Bad command-line values of the AlphaProof tools (train, sft, prove): one ``error:`` line naming the flag,
exit status 2, refused before any work, and nothing written; plus the formats the tools print and read."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch

from agents.alphaproof import cli_checks
from agents.alphaproof import prove as prove_mod
from agents.alphaproof import sft as sft_mod
from agents.alphaproof import train as train_mod
from leangym.cli import run_cli

REPO = Path(__file__).resolve().parents[1]
TRIVIAL = "theorem triv (p : Prop) (hp : p) : p := by sorry"
ROW = {"state": "p : Prop\nhp : p\n⊢ p", "tactic": "exact hp", "steps_to_go": 1}


def _cli(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: main(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _refused(main, argv, capsys, *words):
    """Exit status 2 and exactly one line, ``error: ...``, holding every one of ``words``."""
    code, _, err = _cli(main, argv, capsys)
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err
    return err


@pytest.fixture(scope="module")
def net_file(tmp_path_factory):
    from agents.alphaproof.policy import PolicyValueNet

    path = tmp_path_factory.mktemp("net") / "net.pt"
    PolicyValueNet.create("tiny", max_tactic_tokens=4, seed=0).save(str(path))
    return path


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROW, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _train_argv(tmp_path, *extra):
    return ["--checkpoint-dir", str(tmp_path / "ck"), "--logdir", str(tmp_path / "tb"), "--no-progress",
            "--actors", "1", "--iterations", "1", "--warmup-steps", "0", "--sft-mix", "0", "--eval-every", "0",
            *extra]


def _nothing_written(tmp_path, *keep):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)


# ---------------------------------------------------------------------------- 1. --device
@pytest.fixture
def no_gpu(monkeypatch):
    """A machine without CUDA or MPS, whatever this one has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if getattr(torch.backends, "mps", None) is not None:
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _tool_argv(tool, tmp_path, net_file, rows_file, *extra):
    if tool == "train":
        return train_mod.main, _train_argv(tmp_path, *extra)
    if tool == "sft":
        return sft_mod.main, ["--data", str(rows_file), "--out", str(tmp_path / "sft.pt"), "--steps", "1", *extra]
    return prove_mod.main, ["--checkpoint", str(net_file), "--theorem", TRIVIAL, "--sims", "2", *extra]


@pytest.mark.parametrize("tool", ["train", "sft", "prove"])
@pytest.mark.parametrize("device, words", [
    ("cuda", ("--device cuda", "no CUDA", "--device cpu")),
    ("cuda:1", ("--device cuda:1", "no CUDA", "--device cpu")),
    ("mps", ("--device mps", "no MPS", "--device cpu")),
    ("gpu", ("--device gpu", "cpu, cuda")),
    ("meta", ("--device meta", "cpu, cuda")),
])
def test_a_device_this_machine_lacks_is_one_error(tool, device, words, tmp_path, net_file, rows_file, capsys, no_gpu):
    main, argv = _tool_argv(tool, tmp_path, net_file, rows_file, "--device", device)
    _refused(main, argv, capsys, *words)
    _nothing_written(tmp_path, "rows.jsonl")


def test_check_device_accepts_what_exists(monkeypatch):
    assert cli_checks.check_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert cli_checks.check_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ValueError, match=r"--device cuda:2: this machine has 2 CUDA device\(s\), cuda:0 to cuda:1"):
        cli_checks.check_device("cuda:2")


# ---------------------------------------------------------------------------- 2./3. numbers that cannot work
@pytest.mark.parametrize("flag, value", [
    ("--steps", "0"), ("--batch-size", "0"), ("--steps", "-5"), ("--lr", "0"), ("--lr", "nan"),
    ("--warmup", "-1"), ("--weight-decay", "-0.1"), ("--ckpt-every", "-1"), ("--threads", "-2"), ("--seed", "-1"),
])
def test_sft_refuses_values_that_cannot_work_before_writing(flag, value, tmp_path, rows_file, capsys):
    out = tmp_path / "sft.pt"
    _refused(sft_mod.main, ["--data", str(rows_file), "--out", str(out), "--steps", "1", flag, value], capsys, flag)
    assert not out.exists()  # so the corrected rerun is not refused for an existing --out
    _nothing_written(tmp_path, "rows.jsonl")


def test_sft_tokenizer_file_that_is_missing_or_no_tokenizer(tmp_path, rows_file, capsys):
    out = tmp_path / "sft.pt"
    missing = tmp_path / "nope.json"
    _refused(sft_mod.main, ["--data", str(rows_file), "--out", str(out), "--tokenizer", str(missing)], capsys,
             "No such file", str(missing))
    not_json = tmp_path / "bad.json"
    not_json.write_text("not a tokenizer", encoding="utf-8")
    _refused(sft_mod.main, ["--data", str(rows_file), "--out", str(out), "--tokenizer", str(not_json)], capsys,
             str(not_json), "not a tokenizer file")
    assert not out.exists()
    from agents.alphaproof.tokenizer import load_tokenizer

    with pytest.raises(FileNotFoundError) as e:
        load_tokenizer(str(missing))
    assert e.value.filename == str(missing)
    assert load_tokenizer().vocab_size == load_tokenizer(str(REPO / "agents/alphaproof/assets/tokenizer.json")).vocab_size


@pytest.mark.parametrize("flag, value", [
    ("--sims", "0"), ("--sims", "-3"), ("--lean-calls", "0"), ("--seconds", "-1"), ("--seconds", "0"),
    ("--num-tactics", "0"), ("--seed", "-1"),
    ("--lean-calls", "-3"),  # with --sims omitted: named as itself, not as the --sims it would default
])
def test_prove_refuses_budgets_that_cannot_work(flag, value, net_file, capsys):
    # (the old prove searched and said "no proof found", exit 1)
    _refused(prove_mod.main, ["--checkpoint", str(net_file), "--theorem", TRIVIAL, flag, value], capsys, flag)


@pytest.mark.parametrize("flag, value", [
    ("--num-tactics", "0"), ("--lean-calls", "0"), ("--batch-size", "0"), ("--max-tactic-tokens", "0"),
    ("--replay-size", "0"), ("--iterations", "-1"), ("--learn-steps", "-1"), ("--warmup-steps", "-1"),
    ("--warmup-theorems", "-1"), ("--eval-every", "-1"), ("--min-unsolved-visits", "-1"), ("--threads", "-1"),
    ("--lr", "0"), ("--warmup-lr", "-1"), ("--time-per-theorem", "0"), ("--read-timeout", "0"),
    ("--max-minutes", "0"), ("--max-minutes", "-1"), ("--sft-mix", "1.5"), ("--sft-mix", "-0.1"), ("--seed", "-1"),
    ("--actors", "0"), ("--sims", "0"), ("--eval-size", "0"), ("--heartbeat-timeout", "1.5"),
])
def test_train_refuses_values_that_cannot_work_before_writing(flag, value, tmp_path, capsys):
    _refused(train_mod.main, _train_argv(tmp_path, flag, value), capsys, flag)
    _nothing_written(tmp_path)  # no checkpoint dir, no TensorBoard log


# (Args field, the value that is accepted and what it means, the nearest value that cannot work)
ACCEPTED_AT_THE_EDGE = [
    ("iterations", 0, -1),  # no self-play: the warm start only
    ("learn_steps", 0, -1),  # self-play without learning
    ("warmup_steps", 0, -1),  # no warm start
    ("warmup_theorems", 0, -1),  # no reference proofs generated
    ("eval_every", 0, -1),  # no evaluation
    ("min_unsolved_visits", 0, -1),  # every unsolved node counts as "not provable"
    ("threads", 0, -1),  # torch's default thread count
    ("sft_mix", 0.0, -0.1),  # RL batches without reference-proof rows
    ("time_per_theorem", None, 0.0),  # no time limit per theorem (0 s could find nothing)
    ("max_minutes", None, 0.0),  # no time limit for the run
    ("infer_wait_ms", 0.0, -1.0),  # inference answers what waits at once, no deadline
    ("infer_batch", 0, -1),  # the full batch: one leaf per search
]


@pytest.mark.parametrize("field, accepted, refused", ACCEPTED_AT_THE_EDGE, ids=[f[0] for f in ACCEPTED_AT_THE_EDGE])
def test_zero_is_accepted_where_it_means_something(field, accepted, refused):
    train_mod.check_args(dataclasses.replace(train_mod.Args(), **{field: accepted}))  # no error: it means something
    # ... while the value just past it is refused, naming the flag (so check_args does check this field)
    with pytest.raises(ValueError, match="^" + re.escape(cli_checks.flag(field) + " must be ")):
        train_mod.check_args(dataclasses.replace(train_mod.Args(), **{field: refused}))


# ---------------------------------------------------------------------------- 4. --resume DIR
def test_resume_takes_a_dir_and_says_so(capsys):
    with pytest.raises(SystemExit) as e:
        train_mod.main(["--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--resume [DIR] continue a run" in text and "--checkpoint-dir" in text and "--resume alone" in text
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "`--resume DIR`" in readme and "`--resume` " not in readme


# ---------------------------------------------------------------------------- 5. sft input rows
def test_sft_reads_the_generators_output(tmp_path, capsys):
    from leangym.datasets.proplogic import generate, to_jsonl

    gen = tmp_path / "gen.jsonl"
    to_jsonl(str(gen), generate(6, 0, (1, 2)))
    out = tmp_path / "sft.pt"
    code, stdout, err = _cli(sft_mod.main, ["--data", str(gen), "--out", str(out), "--steps", "1", "--batch-size", "4",
                                            "--device", "cpu"], capsys)
    assert code == 0, err
    assert "6 generator theorems" in stdout and out.exists()
    rows = sft_mod.load_sft_rows(str(gen))
    from leangym.datasets.proplogic import from_row

    same = [from_row(json.loads(line)) for line in gen.read_text(encoding="utf-8").splitlines()]
    assert rows == sft_mod.rows_from_reference_proofs(same)  # the same rows, from the same proofs
    assert all({"state", "tactic", "steps_to_go"} <= set(r) for r in rows)


def test_a_row_that_is_neither_says_what_a_row_looks_like(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"name": "x", "goal": "⊢ p"}) + "\n", encoding="utf-8")
    err = _refused(sft_mod.main, ["--data", str(data), "--out", str(tmp_path / "sft.pt")], capsys,
                   f"{data}:1:", '{"state": ', '"tactic": ', '"steps_to_go": ', "python -m leangym.datasets.proplogic")
    assert "rows_from_reference_proofs" in err
    _nothing_written(tmp_path, "data.jsonl")


def test_a_generator_file_with_a_statement_the_simulator_lacks_names_its_line(tmp_path, capsys):
    data = tmp_path / "gen.jsonl"
    good = {"formal_statement": TRIVIAL, "proof": ["exact hp"]}
    real = {"formal_statement": "theorem t (x : ℝ) (h : x = 2) : x * x = 4 := by sorry", "proof": ["nlinarith"]}
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (good, real)) + "\n", encoding="utf-8")
    _refused(sft_mod.main, ["--data", str(data), "--out", str(tmp_path / "sft.pt")], capsys, f"{data}:2:", "simulator")
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (good, ROW)) + "\n", encoding="utf-8")
    _refused(sft_mod.main, ["--data", str(data), "--out", str(tmp_path / "sft.pt")], capsys, f"{data}:2:",
             "one kind of row")
    _nothing_written(tmp_path, "gen.jsonl")


# ---------------------------------------------------------------------------- 6. what train prints
@pytest.mark.parametrize("warmup, label", [("0", r"before self-play \(no warm start\)"), ("2", "after warm start")])
def test_train_prints_held_out_solve_rates_in_one_format(tmp_path, capsys, warmup, label):
    argv = _train_argv(tmp_path, "--iterations", "0", "--eval-every", "1", "--eval-size", "2", "--sims", "2",
                       "--lean-calls", "4", "--num-tactics", "2", "--max-tactic-tokens", "8", "--logdir", "",
                       "--warmup-steps", warmup)
    code, out, err = _cli(train_mod.main, argv, capsys)
    assert code == 0, err
    rate = r"(\d+/\d+ = \d\.\d{3})"
    warm = re.search(rf"held-out solve rate {label}: {rate}\n", err)
    final = re.search(rf"held-out solve rate: {rate} \({label}\) -> {rate} \(iteration 0\)", out)
    assert warm and final, (out, err)
    assert warm.group(1) == final.group(1) == final.group(2)  # the same evaluation, printed the same way
    k, n = map(int, warm.group(1).split(" = ")[0].split("/"))
    assert n == 2 and warm.group(1).endswith(f"{k / n:.3f}")
    assert train_mod.solve_rate_text({"solve_rate": 7 / 40, "evaluated": 40.0, "not_evaluated": 0.0}) == "7/40 = 0.175"


def test_progress_bar_shows_a_dash_for_an_iteration_without_verdicts(tmp_path, capsys, monkeypatch):
    # an iteration cut short by the time limit has no solve rate (search_stats leaves it out)
    monkeypatch.setattr(train_mod, "search_stats", lambda out: {"crashed_searches": 0.0})
    argv = [a for a in _train_argv(tmp_path, "--sims", "2", "--lean-calls", "4", "--num-tactics", "2",
                                   "--max-tactic-tokens", "8", "--learn-steps", "0", "--logdir", "")
            if a != "--no-progress"]
    code, _, err = _cli(train_mod.main, argv, capsys)
    assert code == 0, err
    assert "solved=-" in err and "nan" not in err


@pytest.mark.parametrize("tool", ["actor", "status"])
@pytest.mark.parametrize("connect", ["127.0.0.1:5555", "tcp://127.0.0.1", "tcp://host:port"])
def test_actor_and_status_refuse_a_connect_that_is_not_tcp_host_port(tool, connect, capsys):
    import importlib

    main = importlib.import_module(f"agents.alphaproof.{tool}").main
    _refused(main, ["--connect", connect], capsys, "--connect", "expected tcp://HOST:PORT")


def test_train_refuses_keys_the_learner_cannot_use_before_the_warm_start(tmp_path, capsys):
    from agents.alphaproof.distributed.keys import make_keys

    keys = tmp_path / "keys"
    make_keys(keys)
    (keys / "server.key_secret").unlink()  # (an actor's copy of the folder, say)
    _refused(train_mod.main, _train_argv(tmp_path, "--keys", str(keys)), capsys, "--keys", "server.key_secret")
    _nothing_written(tmp_path, "keys")
