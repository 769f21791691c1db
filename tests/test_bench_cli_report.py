"""The benchmark command line and its reports: argument checks, resume safety, honest summaries and comparisons.

Runs go through ``scripts.benchmark.main`` on the in-process simulator with a
few tiny theorems, so every test is a real run, not a mock of one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from leangym.harness import benchmark
from leangym.harness.records import AttemptResult, read_results
from leangym.harness.report import compare, markdown, summary_of
from leangym.harness.stats import summarize

# Three provable theorems. Under run()'s --budget-calls 30 the hammer proves t_and and t_or in its root sweep;
# t_imp (`exact fun h => h`) is not in the sweep and needs two of its steps (`intro h`, then `trivial`):
# the root sweep spends the 30 calls first, so the hammer fails on it (budget exhausted).
THEOREMS = [
    {"name": "t_and", "formal_statement": "theorem t_and (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"},
    {"name": "t_or", "formal_statement": "theorem t_or (p q : Prop) (hp : p) : p ∨ q := by sorry"},
    {"name": "t_imp", "formal_statement": "theorem t_imp (p : Prop) (hp : p) : p → p := by sorry"},
]


def write_dataset(path: Path, theorems: list[dict] = THEOREMS) -> Path:
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in theorems), encoding="utf-8")
    return path


def run(out: Path, dataset: Path | str, *extra: str, agent: str = "hammer") -> int:
    return benchmark.main(["--agent", agent, "--dataset", str(dataset), "--sim", "--out", str(out), "--quiet",
                           "--plot", "none", "--budget-calls", "30", *extra])


def result_rows(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r["type"] == "result"]


# --------------------------------------------------------------------------- E: the command line


@pytest.mark.parametrize("flag, value, why", [
    ("--limit", "-1", "must be >= 1, got -1"),  # was: list slicing dropped the last theorem
    ("--limit", "0", "must be >= 1"),
    ("--attempts", "0", "must be >= 1"),  # was: an empty "complete" run, exit 0
    ("--workers", "0", "must be >= 1"),
    ("--budget-seconds", "-1", "must be a finite number > 0"),
    ("--budget-seconds", "nan", "must be a finite number > 0"),
    ("--budget-calls", "-5", "must be >= 0"),
    ("--attempts", "two", "not an integer: 'two'"),
])
def test_bad_numbers_are_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      flag: str, value: str, why: str) -> None:
    data = write_dataset(tmp_path / "d.jsonl")
    with pytest.raises(SystemExit) as e:
        run(tmp_path / "r.jsonl", data, flag, value)
    assert e.value.code == 2
    assert f"argument {flag}: {why}" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_unknown_command_and_unknown_agent_say_what_exists(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert benchmark.main(["sumary", "x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "error: unknown command 'sumary' (did you mean summary?); commands: run, summary, compare" in err
    assert "--agent" not in err  # not "the following arguments are required: --agent, --out"

    assert run(tmp_path / "r.jsonl", write_dataset(tmp_path / "d.jsonl"), agent="hamer") == 2
    err = capsys.readouterr().err
    assert "unknown agent 'hamer' (did you mean hammer?)" in err and "random, hammer" in err


def test_theorems_selects_by_name_and_unknown_names_suggest_close_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl")
    assert run(tmp_path / "r.jsonl", data, "--theorems", "t_imp,t_and") == 0
    assert sorted(r["theorem"] for r in result_rows(tmp_path / "r.jsonl")) == ["t_and", "t_imp"]
    assert read_results(tmp_path / "r.jsonl").header["theorems"] == ["t_imp", "t_and"]

    assert run(tmp_path / "s.jsonl", data, "--theorems", "t_andd") == 2
    assert "no theorem named 't_andd' in the dataset (did you mean t_and?)" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists()


# --------------------------------------------------------------------------- A: attempts lost to server errors


def test_leftover_infra_errors_exit_1_say_rerun_and_show_the_smaller_denominator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "r.jsonl"
    real_run_tasks = benchmark.run_tasks

    def server_fails_on_t_or(tasks, make_prover, lease, config, sink):  # noqa: ANN001
        def failing_sink(r: AttemptResult) -> None:
            if r.theorem == "t_or":  # as bench_run records a final check that got no answer
                r.status, r.proof, r.error = "infra_error", None, "server failure during the final check"
            sink(r)
        return real_run_tasks(tasks, make_prover, lease, config, failing_sink)

    monkeypatch.setattr(benchmark, "run_tasks", server_fails_on_t_or)
    assert run(out, data) == 1  # the run got through its list, but an attempt is still owed
    captured = capsys.readouterr()
    assert "1 attempt hit server errors; rerun the same command to retry them" in captured.err
    assert "| theorems attempted | 2 of 3 |" in captured.out
    assert "**Incomplete run:** 1 of the 3 theorems have no finished attempt" in captured.out
    assert "over the 2 attempted, not all 3" in captured.out

    monkeypatch.setattr(benchmark, "run_tasks", real_run_tasks)
    assert run(out, data) == 0  # the rerun retries it, and only it
    assert "3 theorems x 1 attempts: 2 done, 1 to run" in capsys.readouterr().err
    rs = read_results(out)
    assert {r.status for r in rs.attempts} <= {"proved", "failed"} and len(rs.attempts) == 3
    assert "Incomplete" not in markdown(summary_of(rs), rs.run)


# --------------------------------------------------------------------------- B: resuming the same run only


def test_resume_refuses_results_on_changed_statements(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "r.jsonl"
    assert run(out, data) == 0
    assert all(len(r["statement_hash"]) == 16 for r in result_rows(out))
    assert read_results(out).header["dataset_source"] == str(data.resolve())

    changed = [dict(THEOREMS[0], formal_statement="theorem t_and (p q : Prop) (hp : p) : p ∧ q := by sorry"),
               *THEOREMS[1:]]
    write_dataset(data, changed)
    capsys.readouterr()
    assert run(out, data, "--attempts", "2") == 2
    assert ("error: the statement of 1 theorem changed since this run started (e.g. t_and); use --restart or "
            "another --out") in capsys.readouterr().err
    assert len(result_rows(out)) == 3  # nothing appended

    # a file written before results carried hashes resumes as before
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    out.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "statement_hash"}) + "\n"
                           for r in lines), encoding="utf-8")
    assert run(out, data, "--attempts", "2") == 0
    assert len(result_rows(out)) == 6


def test_resume_compares_resolved_paths_of_dataset_and_agent_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "one.jsonl")
    (tmp_path / "my_agent_bench.py").write_text("from baselines.hammer import HammerProver as Mine\n")
    assert run(Path("r.jsonl"), "one.jsonl", agent="my_agent_bench.py:Mine") == 0
    assert run(Path("r.jsonl"), "./one.jsonl", "--attempts", "2", agent=f"{tmp_path}/my_agent_bench.py:Mine") == 0
    assert len(result_rows(tmp_path / "r.jsonl")) == 6
    # ... while another agent file is still another run
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "my_agent_bench.py").write_text("from baselines.hammer import HammerProver as Mine\n")
    assert run(Path("r.jsonl"), "one.jsonl", agent="other/my_agent_bench.py:Mine") == 2


# --------------------------------------------------------------------------- D: the run as it stands


def test_reports_describe_the_run_as_extended_and_the_rerun_message_is_true(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import matplotlib.pyplot as plt

    from leangym.harness.report import plot

    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "r.jsonl"
    assert run(out, data) == 0
    assert run(out, data, "--attempts", "3") == 0
    capsys.readouterr()
    assert benchmark.main(["summary", str(out)]) == 0
    assert "(3 theorems, 3 attempt(s)," in capsys.readouterr().out.splitlines()[0]
    rs = read_results(out)
    assert len(rs.attempts) == 9

    figures: list = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read its legend
    plot({"r": rs}, tmp_path / "r.png")
    assert "r: pass@1" in [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]

    capsys.readouterr()
    assert run(out, data, "--attempts", "1") == 0  # asks for less than the file holds
    captured = capsys.readouterr()
    assert "3 theorems x 1 attempts: 3 done, 0 to run" in captured.err
    assert "the file also holds 6 finished attempts beyond these" in captured.err
    assert "3 attempt(s)" in captured.out  # the summary still describes the 9 attempts it counts


# --------------------------------------------------------------------------- C and F1: comparing runs


def test_compare_warns_when_runs_differ_and_compares_at_equal_k(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl")
    other = write_dataset(tmp_path / "other.jsonl", [dict(t, name=t["name"] + "_2",
                                                          formal_statement=t["formal_statement"].replace(
                                                              t["name"], t["name"] + "_2"))
                                                     for t in THEOREMS])
    assert run(tmp_path / "one.jsonl", data) == 0
    assert run(tmp_path / "three.jsonl", data, "--attempts", "3") == 0
    assert run(tmp_path / "elsewhere.jsonl", other) == 0
    one, three = read_results(tmp_path / "one.jsonl"), read_results(tmp_path / "three.jsonl")

    text = compare(one, three, "one", "three")
    assert "**Warning: these runs are not directly comparable:**" in text
    assert "- attempts per theorem differs (one: 1, three: 3)" in text
    assert "| pass@1 (k: the smaller attempt count) |" in text
    assert "(solved: by one of its first 1 attempt(s), as in the run with fewer)" in text

    text = compare(one, read_results(tmp_path / "elsewhere.jsonl"), "one", "elsewhere")
    assert "- dataset differs" in text and "no theorem has a finished attempt in both runs" in text

    assert "Warning" not in compare(one, read_results(tmp_path / "one.jsonl"))  # a run and itself


def test_statements_lean_rejects_are_not_prover_errors() -> None:
    results = [AttemptResult("a", 0, "c", "error", error="Lean rejected the statement: unknown identifier 'foo'"),
               AttemptResult("b", 0, "c", "error", error="ValueError: bug in the prover"),
               AttemptResult("c", 0, "c", "proved", proof="rfl")]
    s = summarize(results)
    assert (s.errors, s.statement_errors) == (1, 1)
    assert "| prover errors / statements rejected / infra errors | 1 / 1 / 0 |" in markdown(s)


# --------------------------------------------------------------------------- an interrupted multi-attempt run


def _cut_after_attempt_0(full: Path, cut: Path, keep_second: str = "t_and") -> Path:
    """What an interrupted attempt-major run leaves: every theorem's attempt 0, one theorem's attempt 1."""
    rows = [json.loads(line) for line in full.read_text(encoding="utf-8").splitlines()]
    keep = [r for r in rows if r["type"] == "header"
            or (r["type"] == "result" and (r["attempt"] == 0 or r["theorem"] == keep_second))]
    cut.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
    return cut


def test_an_interrupted_multi_attempt_run_is_incomplete_and_compare_does_not_make_up_pass_at_k(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data, full = write_dataset(tmp_path / "d.jsonl"), tmp_path / "full.jsonl"
    assert run(full, data, "--attempts", "2") == 0
    cut = read_results(_cut_after_attempt_0(full, tmp_path / "cut.jsonl"))
    text = markdown(summary_of(cut), cut.run)
    assert "**Incomplete run:** 4 of 6 attempts finished (3 theorems x 2 attempts)" in text
    assert "Rerun the same command to finish it." in text
    assert "| pass@2 |" not in text  # only up to the fewest attempts a theorem has
    capsys.readouterr()
    assert benchmark.main(["summary", str(tmp_path / "cut.jsonl")]) == 0
    assert "**Incomplete run:** 4 of 6 attempts finished" in capsys.readouterr().out
    assert "Incomplete" not in markdown(summary_of(read_results(full)), read_results(full).run)

    text = compare(read_results(full), cut, "full", "cut")
    assert ("- cut is an incomplete run: 4 of 6 attempts finished, and 2 of its 3 theorems have fewer than 2; "
            "its pass@2 is not shown: rerun its command to resume the run") in text
    (row,) = [line for line in text.splitlines() if line.startswith("| pass@2 |")]
    assert row.split(" | ")[2] == "n/a (incomplete run) |"  # was: 0.0%, from the one theorem with 2 attempts
    assert "%" in row.split(" | ")[1]  # the complete run's pass@2 is still shown
    assert "incomplete" not in compare(read_results(full), read_results(full))


# --------------------------------------------------------------------------- --out: never destroy another file


def test_an_out_file_that_is_not_a_results_file_is_never_truncated_or_deleted(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl")
    precious = tmp_path / "precious.jsonl"  # one row, no newline: was taken for a header cut short
    precious.write_text(json.dumps(THEOREMS[0]), encoding="utf-8")
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nline two\n", encoding="utf-8")
    for victim in (precious, notes):
        before = victim.read_bytes()
        for extra in ((), ("--restart",)):
            capsys.readouterr()
            assert run(victim, data, *extra) == 2
            assert f"error: {victim} is not a leangym results file; choose another --out" in capsys.readouterr().err
            assert victim.read_bytes() == before

    before = data.read_bytes()
    assert run(data, data, "--restart") == 2  # was: --restart deleted the dataset
    assert f"error: --out {data} is the --dataset file; choose another --out" in capsys.readouterr().err
    assert data.read_bytes() == before

    out = tmp_path / "r.jsonl"
    out.write_bytes(b'{"type": "header", "format": 1, "crea')  # a header cut short: started afresh
    assert run(out, data) == 0 and len(result_rows(out)) == 3
    out.write_bytes(b'{"ty')
    assert run(out, data, "--restart") == 0 and len(result_rows(out)) == 3
    assert run(out, data, "--restart") == 0 and len(result_rows(out)) == 3  # a results file: --restart deletes it


# --------------------------------------------------------------------------- --plot


def test_plot_returns_the_file_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from leangym.harness.report import plot

    out = tmp_path / "r.jsonl"
    assert run(out, write_dataset(tmp_path / "d.jsonl")) == 0
    written = plot({"r": read_results(out)}, tmp_path / "curve")
    assert written == tmp_path / "curve.png" and written.is_file()
    capsys.readouterr()
    assert benchmark.main(["summary", str(out), "--plot", str(tmp_path / "other")]) == 0
    assert f"plot: {tmp_path / 'other.png'}" in capsys.readouterr().out and (tmp_path / "other.png").is_file()
    assert benchmark.main(["summary", str(out), "--plot", str(tmp_path / "nodir" / "x.png")]) == 2
    assert f"error: --plot {tmp_path / 'nodir' / 'x.png'}: no directory" in capsys.readouterr().err


def test_a_bad_plot_path_is_refused_before_the_run_and_a_plot_failure_keeps_the_exit_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "r.jsonl"
    missing = tmp_path / "nodir" / "p.png"
    assert run(out, data, "--plot", str(missing)) == 2
    assert (f"error: --plot {missing}: no directory {missing.parent}; create it or choose another --plot "
            "(or --plot none)") in capsys.readouterr().err
    assert not out.exists()  # nothing ran
    assert run(out, data, "--plot", str(tmp_path / "p.xyz")) == 2  # a format matplotlib does not write
    assert "not an image file name" in capsys.readouterr().err and not out.exists()

    def broken_plot(runs, path):  # noqa: ANN001, ANN202 - e.g. a format matplotlib does not know, a full disk
        raise ValueError("Format 'xyz' is not supported")

    monkeypatch.setattr(benchmark, "plot", broken_plot)
    real_run_tasks = benchmark.run_tasks

    def interrupted_after_one(tasks, make_prover, lease, config, sink):  # noqa: ANN001, ANN202
        real_run_tasks(tasks[:1], make_prover, lease, config, sink)
        raise KeyboardInterrupt

    monkeypatch.setattr(benchmark, "run_tasks", interrupted_after_one)
    assert run(out, data, "--plot", str(tmp_path / "p.png")) == 130  # was: 2, from the plot
    err = capsys.readouterr().err
    assert "warning: could not write the plot (--plot): Format 'xyz' is not supported" in err
    assert "interrupted; rerun the same command to resume" in err
    monkeypatch.setattr(benchmark, "run_tasks", real_run_tasks)
    assert run(out, data, "--plot", str(tmp_path / "p.png")) == 0


# --------------------------------------------------------------------------- --theorems and --split


def test_theorems_of_another_split_say_which_split_to_pass(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl", [dict(THEOREMS[0], split="test"), dict(THEOREMS[1], split="valid")])
    assert run(tmp_path / "r.jsonl", data, "--split", "test", "--theorems", "t_or") == 2
    assert "error: --theorems: 't_or' is in split 'valid', not 'test': pass --split valid" in capsys.readouterr().err
    assert run(tmp_path / "r.jsonl", data, "--split", "test", "--theorems", "t_and,t_or") == 2
    assert ("error: --theorems: 't_or' is in split 'valid', not 'test': leave out --split (the names are in "
            "splits 'test' and 'valid')") in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
    assert run(tmp_path / "r.jsonl", data, "--split", "valid", "--theorems", "t_or") == 0


def test_a_second_run_into_the_same_out_or_checkpoint_dir_is_refused_while_the_first_runs(tmp_path):
    """Two benchmark runs into one --out wrote every attempt twice; two trainings into one --checkpoint-dir
    overwrote each other. A run holds its output (an OS lock, gone with the process) while it runs."""
    from agents.alphaproof.train import Args, train
    from leangym.cli import exclusive

    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "r.jsonl"
    with exclusive(tmp_path / ".r.jsonl.lock", "a first run", "--out"):  # as a first run holds it
        with pytest.raises(ValueError, match=r"--out .*r\.jsonl is in use by another run \(pid \d+\)"):
            run(out, data)
    assert run(out, data) == 0 and result_rows(out)  # once it is free
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no lock file left behind
    ck = tmp_path / "ck"
    with exclusive(ck / ".lock", "a first run", "--checkpoint-dir"):
        with pytest.raises(ValueError, match="--checkpoint-dir .*ck is in use by another run"):
            train(Args(checkpoint_dir=str(ck), logdir="", iterations=0, warmup_steps=0, progress=False))


def test_the_lock_file_goes_with_the_run_that_held_it(tmp_path):
    """A finished run removes its lock file (benchmark runs left ``.NAME.jsonl.lock`` behind); the
    next run takes the lock anew, and it still keeps a second run out while held."""
    from leangym.cli import exclusive

    lock = tmp_path / ".r.jsonl.lock"
    for _ in range(2):
        with exclusive(lock, "--out r.jsonl", "--out"):
            assert lock.read_text() == f"pid {os.getpid()}\n"
            with pytest.raises(ValueError, match=r"--out r\.jsonl is in use by another run \(pid \d+\)"):
                with exclusive(lock, "--out r.jsonl", "--out"):
                    pass
        assert not lock.exists()


def test_a_new_run_does_not_replace_an_image_it_did_not_draw(tmp_path: Path, capsys) -> None:
    """Without --plot the plot goes to OUT.png: a fresh run refuses to replace a file already there;
    a resumed run redraws its own."""
    data, out = write_dataset(tmp_path / "d.jsonl"), tmp_path / "my.jsonl"
    (tmp_path / "my.png").write_bytes(b"my precious figure")
    args = ["--agent", "hammer", "--dataset", str(data), "--sim", "--out", str(out), "--quiet", "--budget-calls", "30"]
    assert benchmark.main(args) == 2
    assert "my.png exists and this new run would replace it" in capsys.readouterr().err and not out.exists()
    (tmp_path / "my.png").unlink()
    assert benchmark.main(args) == 0 and (tmp_path / "my.png").read_bytes().startswith(b"\x89PNG")
    assert benchmark.main(args) == 0  # its own plot, on a rerun
