"""``python -m scripts.benchmark recheck``: a results file's proofs checked again without the agent."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from leangym.harness import benchmark
from leangym.harness.records import read_results

STATEMENTS = {
    "and_swap": "theorem and_swap (p q : Prop) (h : p ∧ q) : q ∧ p := by sorry",
    "imp_self": "theorem imp_self (p : Prop) : p → p := by sorry",
    "nat_comm": "theorem nat_comm (a b : ℕ) : a + b = b + a := by sorry",
    "false_thm": "theorem false_thm : False := by sorry",
}


def write_dataset(path: Path, statements: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"name": n, "formal_statement": s}) + "\n" for n, s in statements.items()),
                    encoding="utf-8")
    return path


def run(tmp_path: Path, dataset: Path, out: str, *agent: str) -> Path:
    assert benchmark.main(["--agent", *agent, "--dataset", str(dataset), "--sim", "--out", str(tmp_path / out),
                           "--quiet", "--plot", "none", "--budget-calls", "80"]) == 0
    return tmp_path / out


def recheck(path: Path, *extra: str) -> int:
    return benchmark.main(["recheck", str(path), "--sim", "--quiet", *extra])


def rewrite_results(path: Path, edit) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(edit(r) if r.get("type") == "result" else r) + "\n" for r in rows),
                    encoding="utf-8")


def test_an_honest_run_rechecks_whole(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    proved = sorted(r.theorem for r in read_results(out).attempts if r.solved)
    assert proved and "false_thm" not in proved
    capsys.readouterr()
    assert recheck(out) == 0
    assert f"rechecked {len(proved)} of {len(proved)} proofs: {len(proved)} hold, 0 do not" in capsys.readouterr().out


def test_an_agent_that_patches_the_harness_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness cannot stop agent code that rewrites it in its own interpreter; the recheck imports no agent."""
    (tmp_path / "patcher.py").write_text(textwrap.dedent('''
        import leangym.harness.run
        from leangym.soundness import Verification

        class Patcher:
            def prove(self, theorem, session, budget):
                leangym.harness.run.verify = lambda *a, **k: Verification(True, "")
                return "trivial"
    '''), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import leangym.harness.run
    monkeypatch.setattr(leangym.harness.run, "verify", leangym.harness.run.verify)  # undone after the test
    data = write_dataset(tmp_path / "d.jsonl", {"false_thm": STATEMENTS["false_thm"]})
    out = run(tmp_path, data, "patched.jsonl", "patcher:Patcher")
    assert [r.status for r in read_results(out).attempts] == ["proved"]  # fooled
    monkeypatch.undo()
    sys.modules.pop("patcher", None)
    capsys.readouterr()
    assert recheck(out, "--dataset", str(data)) == 1
    text = capsys.readouterr().out
    assert "0 hold, 1 do not" in text and "DOES NOT HOLD  false_thm (attempt 0)" in text


@pytest.mark.parametrize("tamper, why", [
    (lambda r: {**r, "proof": "sorry"}, "'sorry' is not allowed"),
    (lambda r: {**r, "proof": "exact no_such_thing"}, "final check failed"),
    (lambda r: {**r, "statement_hash": "0" * 16}, "statement differs"),
    (lambda r: {**r, "theorem": "renamed"}, "no theorem of this name"),
])
def test_an_edited_results_file_does_not_hold(tmp_path: Path, capsys: pytest.CaptureFixture, tamper, why) -> None:
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    rewrite_results(out, lambda r: tamper(r) if r["theorem"] == "imp_self" else r)
    capsys.readouterr()
    assert recheck(out) == 1
    text = capsys.readouterr().out
    assert "1 do not" in text and why in text


def test_a_changed_dataset_statement_does_not_hold(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    write_dataset(data, {**STATEMENTS, "imp_self": "theorem imp_self (p q : Prop) : p → q := by sorry"})
    capsys.readouterr()
    assert recheck(out) == 1
    assert "DOES NOT HOLD  imp_self (attempt 0): the dataset's statement differs" in capsys.readouterr().out


def test_recheck_mistakes_are_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n", encoding="utf-8")
    assert recheck(other) == 2
    assert "not a leangym results file" in capsys.readouterr().err
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    data.unlink()
    capsys.readouterr()
    assert recheck(out) == 2
    assert "pass --dataset where it is now" in capsys.readouterr().err


def test_a_resume_line_naming_another_dataset_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Round five: recheck took the dataset from the last resume line, which an edited file could point at
    easier statements of the same names. A run never changes its dataset: such a file needs --dataset."""
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    easy = write_dataset(tmp_path / "easy.jsonl", {n: STATEMENTS["imp_self"].replace("imp_self", n) for n in STATEMENTS})
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps({**header, "type": "resume", "dataset": str(easy), "dataset_source": str(easy)}) + "\n")
    capsys.readouterr()
    assert recheck(out) == 2
    assert "names more than one dataset" in capsys.readouterr().err
    assert recheck(out, "--dataset", str(data)) == 0
    err = capsys.readouterr().err
    assert "as the results file names it" not in err


def test_recheck_says_where_the_statements_come_from(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    capsys.readouterr()
    assert recheck(out) == 0
    assert f"statements from {str(data)!r}, as the results file names it" in capsys.readouterr().err


def test_plot_none_writes_no_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = write_dataset(tmp_path / "d.jsonl", STATEMENTS)
    out = run(tmp_path, data, "hammer.jsonl", "hammer")
    monkeypatch.chdir(tmp_path)
    assert benchmark.main(["summary", str(out), "--plot", "none"]) == 0
    assert benchmark.main(["compare", str(out), str(out), "--plot", "none"]) == 0
    assert not list(tmp_path.glob("*.png"))
