"""The benchmark command line and its reports: argument checks, resume safety, honest summaries and comparisons.

Runs go through ``scripts.benchmark.main`` on the in-process simulator with a
few tiny theorems, so every test is a real run, not a mock of one.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts import benchmark
from scripts.bench_records import AttemptResult, read_results
from scripts.bench_report import compare, markdown, summary_of
from scripts.bench_stats import summarize

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
    ("--limit", "-1", "must be at least 1, got -1"),  # was: list slicing dropped the last theorem
    ("--limit", "0", "must be at least 1"),
    ("--attempts", "0", "must be at least 1"),  # was: an empty "complete" run, exit 0
    ("--workers", "0", "must be at least 1"),
    ("--budget-seconds", "-1", "must be a number above 0"),
    ("--budget-seconds", "nan", "must be a number above 0"),
    ("--budget-calls", "-5", "must be 0 (unlimited) or more"),
    ("--attempts", "two", "expected a whole number, got 'two'"),
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

    from scripts.bench_report import plot

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
