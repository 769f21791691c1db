"""Theorem sets: miniF2F rows (both shapes), validation errors, the named "minif2f" set from local copies,
built Lean checkouts, .json arrays. (Downloads and the cache: test_datasets_download.py; parsing .lean
files: test_datasets_lean_files.py.)"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dataset_rows import DEEPSEEK_ROW, HEADER, ROWS, names, write_jsonl
from leangym.datasets import DatasetError, category, category_of, load_minif2f, load_theorems
from leangym.datasets import minif2f as minif2f_mod


def test_minif2f_rows_split_and_categories(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "m.jsonl", ROWS + [DEEPSEEK_ROW])
    everything = load_minif2f(f)
    assert [t.name for t in everything] == [r["name"] for r in ROWS] + ["mathd_numbertheory_33"]
    test = load_minif2f(f, split="test")
    assert [t.name for t in test] == ["mathd_algebra_1", "imo_1959_p1"]
    assert all(t.formal_statement.endswith(":= by sorry") and t.header == HEADER for t in test)
    assert [category(t.name) for t in everything] == ["mathd_algebra", "aime", "imo", "mathd_numbertheory"]
    assert category("algebra_2rootsintpoly") == "algebra" and category("amc12b_2002_p19") == "amc12"
    assert category("numbertheory_4x3m7y3neq2003") == "numbertheory" and category("induction_x") == "induction"


def test_deepseek_variant_is_normalised_and_keeps_extra_fields(tmp_path: Path) -> None:
    (t,) = load_minif2f(write_jsonl(tmp_path / "ds.jsonl", [DEEPSEEK_ROW]))
    assert t.formal_statement == "theorem mathd_numbertheory_33 (n : ℕ) (h₀ : n < 398) : n = 57 := by sorry"
    assert t.extra["informal_prefix"] == "/-- Find n. -/\n" and "goal" in t.extra
    assert t.split == "valid" and "import Aesop" in t.header


@pytest.mark.parametrize("bad, line, why", [
    ({2: "{not json"}, 3, "invalid JSON"),
    ({1: json.dumps({"name": "x", "split": "test"})}, 2, "missing field 'formal_statement'"),
    ({1: json.dumps({"split": "test", "formal_statement": "theorem x : True := by sorry"})}, 2,
     "missing field 'name'"),
    ({3: json.dumps({"name": "y", "split": "test", "formal_statement": "theorem y : True := trivial"})}, 4,
     "must end with ':= by sorry'"),
    ({1: json.dumps({"name": "z", "split": "train", "formal_statement": "theorem z : True := by sorry"})}, 2,
     "split 'train'"),
    ({1: json.dumps(ROWS[2])}, 4, "duplicate theorem name 'imo_1959_p1' (first at line 2)"),
    ({0: json.dumps({"name": 3, "split": "test", "formal_statement": "theorem w : True := by sorry"})}, 1,
     "field 'name' must be a string"),
    ({0: "[1, 2]"}, 1, "expected a JSON object"),
])
def test_validation_errors_name_file_line_and_reason(tmp_path: Path, bad: dict, line: int, why: str) -> None:
    f = write_jsonl(tmp_path / "bad.jsonl", ROWS, bad)
    with pytest.raises(DatasetError) as err:
        load_minif2f(f)
    assert f"{f}:{line}:" in str(err.value) and why in str(err.value)


def test_unknown_split_and_unknown_spec(tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "m.jsonl", ROWS)
    with pytest.raises(DatasetError, match="splits"):
        load_minif2f(f, split="train")
    with pytest.raises(DatasetError, match="no theorems in split 'nope'"):
        load_theorems(f, split="nope")
    with pytest.raises(DatasetError, match="unknown theorem set"):
        load_theorems(tmp_path / "missing.txt")
    with pytest.raises(DatasetError, match="empty"):
        load_theorems(write_jsonl(tmp_path / "empty.jsonl", []))


def test_proplogic_heldout_hides_reference_proofs() -> None:
    theorems = load_theorems("proplogic-heldout:10")
    assert len(theorems) == 10 and len({t.name for t in theorems}) == 10
    assert all("proof" not in t.extra for t in theorems)
    assert {category_of(t) for t in theorems} <= {f"level{i}" for i in range(1, 6)}
    assert load_theorems("proplogic-heldout:4", split="heldout") == theorems[:4]


def _shared_minif2f() -> Path | None:
    env = os.environ.get("LEANGYM_MINIF2F")
    if env:
        p = Path(env).expanduser()
        p = p / "minif2f_lean4.jsonl" if p.is_dir() else p
    else:
        p = Path(__file__).resolve().parents[1] / minif2f_mod.SHARED_RELATIVE
    return p if p.exists() else None  # a LEANGYM_MINIF2F naming nothing: skip, not fail


@pytest.mark.skipif(_shared_minif2f() is None,
                    reason="no shared miniF2F copy (LEANGYM_MINIF2F unset or naming nothing, and no ../shared)")
def test_shared_minif2f_copy() -> None:
    test = load_theorems("minif2f", split="test")
    valid = load_minif2f(_shared_minif2f(), split="valid")
    assert len(test) == 244 and len(valid) == 244
    assert {category(t.name) for t in test} >= {"mathd_algebra", "mathd_numbertheory", "amc12", "aime", "imo"}


def test_a_line_separator_inside_a_row_does_not_split_it(tmp_path: Path) -> None:
    row = dict(ROWS[1], informal="two\u2028lines\x85here")  # written raw (ensure_ascii=False)
    (t,) = load_theorems(write_jsonl(tmp_path / "sep.jsonl", [row]))
    assert t.extra["informal"] == "two\u2028lines\x85here"


# ------------------------------------------------ the named "minif2f" set, without ../shared


def test_minif2f_from_the_env_var_naming_a_file(no_shared_copy, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    monkeypatch.setenv("LEANGYM_MINIF2F", str(f))
    assert minif2f_mod.local_copy() == f
    assert names(load_theorems("minif2f")) == [r["name"] for r in ROWS]
    test = load_theorems("minif2f", split="test")
    assert names(test) == ["mathd_algebra_1", "imo_1959_p1"]
    assert all(t.header == HEADER and t.formal_statement.endswith(":= by sorry") for t in test)
    assert names(load_minif2f(split="valid")) == ["aimeI_2000_p7"]
    assert not (tmp_path / "cache").exists()  # nothing was downloaded


def test_minif2f_from_the_env_var_naming_a_directory(no_shared_copy, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "data"
    d.mkdir()
    write_jsonl(d / minif2f_mod.FILE_NAME, ROWS)
    write_jsonl(d / "other.jsonl", [DEEPSEEK_ROW])  # only minif2f_lean4.jsonl is read
    monkeypatch.setenv("LEANGYM_MINIF2F", str(d))
    assert minif2f_mod.local_copy() == d / minif2f_mod.FILE_NAME
    assert names(load_theorems("minif2f")) == [r["name"] for r in ROWS]
    assert names(load_theorems("minif2f", split="valid")) == ["aimeI_2000_p7"]


@pytest.mark.parametrize("where", ["missing.jsonl", "empty_dir"])
def test_minif2f_env_var_naming_nothing_is_a_clear_error(no_shared_copy, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    target = tmp_path / where
    if where == "empty_dir":
        target.mkdir()  # a directory without minif2f_lean4.jsonl
    monkeypatch.setenv("LEANGYM_MINIF2F", str(target))
    expected = target / minif2f_mod.FILE_NAME if target.is_dir() else target
    nor = " (nor any .lean file in that directory)" if target.is_dir() else ""
    for load in (lambda: load_theorems("minif2f"), lambda: load_minif2f(split="test")):
        with pytest.raises(DatasetError) as err:
            load()
        assert str(err.value) == f"LEANGYM_MINIF2F={str(target)!r}: no such file {expected}{nor}"
    assert not (tmp_path / "cache").exists()  # no silent fallback to a download


def test_minif2f_shared_copy_beside_the_repository(no_shared_copy, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shared = (no_shared_copy / minif2f_mod.SHARED_RELATIVE).resolve()
    shared.parent.mkdir(parents=True)
    write_jsonl(shared, ROWS[:2])
    assert minif2f_mod.local_copy() == shared
    assert names(load_theorems("minif2f")) == ["mathd_algebra_1", "aimeI_2000_p7"]
    # LEANGYM_MINIF2F comes first
    monkeypatch.setenv("LEANGYM_MINIF2F", str(write_jsonl(tmp_path / "mine.jsonl", [ROWS[2]])))
    assert names(load_theorems("minif2f")) == ["imo_1959_p1"]


# ------------------------------------------------ Lean projects: a built checkout, and miniF2F as a directory of .lean
def _lean_project(root: Path) -> Path:
    """A built miniF2F-lean4-like checkout: MiniF2F/{Test,Valid}/*.lean, and Lake's trees holding
    files with many theorems (Mathlib's sources) that are no part of the theorem set."""
    (root / "MiniF2F" / "Test").mkdir(parents=True)
    (root / "MiniF2F" / "Valid").mkdir()
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage minif2f\n", encoding="utf-8")
    (root / "MiniF2F" / "Test" / "a.lean").write_text("import Mathlib\ntheorem a : True := by sorry\n")
    (root / "MiniF2F" / "Valid" / "b.lean").write_text("import Mathlib\ntheorem b : True := by sorry\n")
    two = "theorem x : True := trivial\ntheorem y : True := trivial\n"
    for junk in (".lake/packages/mathlib/Mathlib/Logic/Basic.lean", "lake-packages/std/Std/Data.lean",
                 ".git/hooks/x.lean", "MiniF2F/.hidden/z.lean"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text(two, encoding="utf-8")
    return root


def test_a_built_lean_project_is_read_without_lake_packages_and_hidden_dirs(tmp_path: Path) -> None:
    root = _lean_project(tmp_path / "miniF2F-lean4")
    assert [(t.name, t.split) for t in load_theorems(root)] == [("a", "test"), ("b", "valid")]
    assert names(load_theorems(root, split="valid")) == ["b"]


def test_minif2f_from_a_directory_of_lean_files(no_shared_copy, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = _lean_project(tmp_path / "miniF2F-lean4")
    monkeypatch.setenv("LEANGYM_MINIF2F", str(root))
    assert minif2f_mod.local_copy() == root
    assert names(load_theorems("minif2f", split="test")) == ["a"]
    monkeypatch.delenv("LEANGYM_MINIF2F")
    assert names(load_theorems(f"minif2f:{root}", split="valid")) == ["b"]
    assert names(load_minif2f(root)) == ["a", "b"]
    assert not (tmp_path / "cache").exists()  # nothing was downloaded


# ------------------------------------------------ .json: a top-level array of rows
def test_a_json_array_of_rows_is_read_and_other_json_says_what_is_expected(tmp_path: Path) -> None:
    arr = tmp_path / "rows.json"
    arr.write_text(json.dumps(ROWS, indent=2, ensure_ascii=False), encoding="utf-8")
    assert names(load_theorems(arr)) == [r["name"] for r in ROWS]
    assert names(load_minif2f(arr, split="test")) == ["mathd_algebra_1", "imo_1959_p1"]
    (tmp_path / "one_line.json").write_text(json.dumps(ROWS[:2], ensure_ascii=False), encoding="utf-8")
    assert names(load_theorems(tmp_path / "one_line.json")) == ["mathd_algebra_1", "aimeI_2000_p7"]

    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps([ROWS[0], 3, ROWS[0]], indent=2, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dup\.json: item 2: expected a JSON object, got int"):
        load_theorems(dup)
    dup.write_text(json.dumps([ROWS[0], ROWS[0]], indent=2, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dup\.json: item 2: duplicate theorem name 'mathd_algebra_1' "
                                           r"\(first at item 1\)"):
        load_theorems(dup)

    obj = tmp_path / "obj.json"  # one pretty-printed object: not JSON Lines
    obj.write_text(json.dumps(ROWS[0], indent=2, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_theorems(obj)
    assert f"{obj}:1: invalid JSON" in str(err.value)
    assert "expected JSON Lines: one object per line" in str(err.value)


def test_a_split_folder_holds_its_files_theorems_however_many(tmp_path: Path) -> None:
    """A second theorem in `Test/foo.lean` used to give both the split 'foo': held-out theorems trained on."""
    one = "theorem a (p : Prop) (hp : p) : p := by sorry\n"
    two = one + "\ntheorem b (p : Prop) (hp : p) : p := by sorry\n"
    (tmp_path / "Test").mkdir()
    (tmp_path / "Test" / "foo.lean").write_text(two, encoding="utf-8")
    (tmp_path / "Valid.lean").write_text(one.replace(" a ", " c "), encoding="utf-8")
    assert {t.name: t.split for t in load_theorems(str(tmp_path))} == {"a": "test", "b": "test", "c": "valid"}


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path: Path) -> None:
    lean = tmp_path / "bom.lean"
    lean.write_bytes("\ufeffimport Mathlib\n\ntheorem a (p : Prop) (hp : p) : p := by sorry\n".encode("utf-8"))
    assert "\ufeff" not in load_theorems(str(lean))[0].header
    rows = write_jsonl(tmp_path / "bom.jsonl", ROWS)
    rows.write_bytes(b"\xef\xbb\xbf" + rows.read_bytes())
    assert len(load_theorems(str(rows))) == len(ROWS)


@pytest.mark.parametrize("spec", ["proplogic-heldout:0", "proplogic-heldout:²", "proplogic-heldout:999999999"])
def test_a_bad_proplogic_size_is_a_clear_error(spec: str) -> None:
    with pytest.raises(DatasetError, match="whole number from 1 to 100000"):
        load_theorems(spec)


def test_an_error_deep_in_a_pretty_printed_json_array_names_its_line(tmp_path: Path) -> None:
    rows = [{"name": f"t{i}", "formal_statement": f"theorem t{i} : True := by sorry"} for i in range(5)]
    text = json.dumps(rows, indent=2)
    (tmp_path / "pretty.json").write_text(text[:-2] + ",\n]", encoding="utf-8")  # a trailing comma, near the end
    with pytest.raises(DatasetError, match=r"pretty\.json:22: invalid JSON .* JSON array"):
        load_theorems(str(tmp_path / "pretty.json"))


def test_minif2f_of_a_file_url_naming_a_checkout(no_shared_copy, tmp_path: Path) -> None:
    root = tmp_path / "MiniF2F"
    (root / "Test").mkdir(parents=True)
    (root / "Test" / "a.lean").write_text("theorem aime_a (p : Prop) (hp : p) : p := by sorry\n", encoding="utf-8")
    assert [(t.name, t.split) for t in load_theorems(f"minif2f:{root.as_uri()}")] == [("aime_a", "test")]


