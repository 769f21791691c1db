"""Theorem sets: miniF2F rows (both shapes), validation errors, download into the cache, the named
"minif2f" set, built Lean checkouts, .json arrays. (Parsing .lean files: test_datasets_lean_files.py.)"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from leangym.datasets import (
    DatasetError, DownloadError, category, category_of, fetch, load_minif2f, load_theorems,
)
from leangym.datasets import minif2f as minif2f_mod

HEADER = "import Mathlib\n\nopen BigOperators Real Nat Topology Rat\n\n"
ROWS = [
    {"name": "mathd_algebra_1", "split": "test", "header": HEADER,
     "formal_statement": "theorem mathd_algebra_1 (x : ℝ) (h : x = 2) : x + 1 = 3 := by sorry"},
    {"name": "aimeI_2000_p7", "split": "valid", "header": HEADER,
     "formal_statement": "theorem aimeI_2000_p7 : (2 : ℕ) + 2 = 4 := by sorry"},
    {"name": "imo_1959_p1", "split": "test", "header": HEADER,
     "formal_statement": "theorem imo_1959_p1 (n : ℕ) (h₀ : 0 < n) :\n  Nat.gcd (21 * n + 4) (14 * n + 3) = 1 := by sorry"},
]
# DeepSeek-Prover-V1.5 shape: `:= by` without sorry, trailing newline, extra fields.
DEEPSEEK_ROW = {"name": "mathd_numbertheory_33", "split": "valid", "informal_prefix": "/-- Find n. -/\n",
                "formal_statement": "theorem mathd_numbertheory_33 (n : ℕ) (h₀ : n < 398) : n = 57 := by\n",
                "goal": "n : ℕ\nh₀ : n < 398\n⊢ n = 57", "header": "import Mathlib\nimport Aesop\n\n"}


def write_jsonl(path: Path, rows: list, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    for i, text in (raw_lines or {}).items():
        lines.insert(i, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


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


@pytest.fixture
def http_dir(tmp_path: Path):
    """A local http.server on 127.0.0.1 serving ``tmp_path/www``; yields (dir, base url, stop)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    yield www, f"http://127.0.0.1:{httpd.server_address[1]}", stop
    stop()


def test_download_into_cache_with_sha256(http_dir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, stop = http_dir
    cache = tmp_path / "cache"
    monkeypatch.setenv("LEANGYM_CACHE", str(cache))
    f = write_jsonl(www / "minif2f.jsonl", ROWS + [DEEPSEEK_ROW])
    digest = hashlib.sha256(f.read_bytes()).hexdigest()
    url = f"{base}/minif2f.jsonl"

    with pytest.raises(DownloadError, match="sha256 mismatch"):
        fetch(url, sha256="0" * 64)
    assert not any(cache.iterdir())  # neither the bad file nor a temp file is left behind

    theorems = load_minif2f(url, split="valid", sha256=digest)
    assert [t.name for t in theorems] == ["aimeI_2000_p7", "mathd_numbertheory_33"]
    cached = list(cache.iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("-minif2f.jsonl")
    assert cached[0].read_bytes() == f.read_bytes()

    stop()  # the cached copy is used from now on
    assert len(load_theorems(url)) == 4
    with pytest.raises(DownloadError, match="HTTP 404|download failed"):
        fetch(f"{base}/other.jsonl")


def test_download_file_url_and_http_404(http_dir, tmp_path: Path) -> None:
    www, base, _ = http_dir
    f = write_jsonl(tmp_path / "local.jsonl", ROWS)
    assert fetch(f.resolve().as_uri(), cache=tmp_path / "c") == f.resolve()  # read in place, not copied
    assert not (tmp_path / "c").exists()
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(f"{base}/missing.jsonl", cache=tmp_path / "c")
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        fetch("ftp://example.org/x.jsonl", cache=tmp_path / "c")


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


def test_a_download_that_is_not_theorems_is_never_cached(http_dir, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, _ = http_dir
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    page = www / "page.jsonl"
    page.write_text("<html><body>rate limited</body></html>\n", encoding="utf-8")  # served with 200
    with pytest.raises(DownloadError, match="not cached"):
        load_theorems(f"{base}/page.jsonl")
    assert list((tmp_path / "cache").iterdir()) == []  # neither the page nor a .part file
    write_jsonl(www / "good.jsonl", ROWS)
    cached = fetch(f"{base}/good.jsonl", cache=tmp_path / "c", validate=load_theorems)
    assert cached.stat().st_mode & 0o044 == 0o044  # readable by others too: caches may be shared


# ------------------------------------------------ the named "minif2f" set, without ../shared
@pytest.fixture
def no_shared_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No LEANGYM_MINIF2F, no shared copy beside the repository, an empty cache: returns the fake repo
    root (its ``../shared`` does not exist until a test writes it)."""
    monkeypatch.delenv("LEANGYM_MINIF2F", raising=False)
    root = tmp_path / "checkout" / "main"
    root.mkdir(parents=True)
    monkeypatch.setattr(minif2f_mod, "repo_root", lambda: root)
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    # anything that would still go to the network fails loudly
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", "http://127.0.0.1:9/nowhere/minif2f.jsonl")
    assert minif2f_mod.local_copy() is None
    return root


def _names(theorems) -> list[str]:
    return [t.name for t in theorems]


def test_minif2f_from_the_env_var_naming_a_file(no_shared_copy, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    monkeypatch.setenv("LEANGYM_MINIF2F", str(f))
    assert minif2f_mod.local_copy() == f
    assert _names(load_theorems("minif2f")) == [r["name"] for r in ROWS]
    test = load_theorems("minif2f", split="test")
    assert _names(test) == ["mathd_algebra_1", "imo_1959_p1"]
    assert all(t.header == HEADER and t.formal_statement.endswith(":= by sorry") for t in test)
    assert _names(load_minif2f(split="valid")) == ["aimeI_2000_p7"]
    assert not (tmp_path / "cache").exists()  # nothing was downloaded


def test_minif2f_from_the_env_var_naming_a_directory(no_shared_copy, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "data"
    d.mkdir()
    write_jsonl(d / minif2f_mod.FILE_NAME, ROWS)
    write_jsonl(d / "other.jsonl", [DEEPSEEK_ROW])  # only minif2f_lean4.jsonl is read
    monkeypatch.setenv("LEANGYM_MINIF2F", str(d))
    assert minif2f_mod.local_copy() == d / minif2f_mod.FILE_NAME
    assert _names(load_theorems("minif2f")) == [r["name"] for r in ROWS]
    assert _names(load_theorems("minif2f", split="valid")) == ["aimeI_2000_p7"]


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
    assert _names(load_theorems("minif2f")) == ["mathd_algebra_1", "aimeI_2000_p7"]
    # LEANGYM_MINIF2F comes first
    monkeypatch.setenv("LEANGYM_MINIF2F", str(write_jsonl(tmp_path / "mine.jsonl", [ROWS[2]])))
    assert _names(load_theorems("minif2f")) == ["imo_1959_p1"]


def test_minif2f_downloads_the_default_url_without_a_local_copy(no_shared_copy, http_dir, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    www, base, _ = http_dir
    remote = write_jsonl(www / "minif2f.jsonl", ROWS + [DEEPSEEK_ROW])
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", f"{base}/minif2f.jsonl")
    assert _names(load_theorems("minif2f", split="valid")) == ["aimeI_2000_p7", "mathd_numbertheory_33"]
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1 and cached[0].name.endswith("-minif2f.jsonl")
    assert cached[0].read_bytes() == remote.read_bytes()
    remote.unlink()  # from now on the cached copy is read
    assert _names(load_minif2f()) == [r["name"] for r in ROWS] + ["mathd_numbertheory_33"]


def test_offline_minif2f_is_one_error_line_that_says_what_to_do(no_shared_copy, tmp_path: Path, capsys) -> None:
    """No local copy and no network: the benchmark CLI ends with one ``error:`` line (status 2, not
    the harness's "rerun to retry" status 1) that names $LEANGYM_MINIF2F."""
    from leangym.cli import run_cli
    from scripts import benchmark

    with pytest.raises(DownloadError, match="LEANGYM_MINIF2F"):
        load_minif2f()
    argv = ["--agent", "hammer", "--dataset", "minif2f", "--split", "test", "--limit", "2",
            "--out", str(tmp_path / "out.jsonl"), "--sim", "--quiet"]
    with pytest.raises(SystemExit) as e:
        run_cli(lambda: benchmark.main(argv))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and "LEANGYM_MINIF2F" in err
    assert "Traceback" not in err and not (tmp_path / "out.jsonl").exists()


# ------------------------------------------------ an edited source: file:// is read in place, http says it is cached
def test_a_file_url_is_read_in_place_so_edits_are_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    f = write_jsonl(tmp_path / "mine.jsonl", ROWS[:2])
    url = f.resolve().as_uri()
    assert _names(load_theorems(url)) == ["mathd_algebra_1", "aimeI_2000_p7"]
    write_jsonl(f, ROWS)  # was: the first read stayed cached forever
    assert _names(load_theorems(url)) == [r["name"] for r in ROWS]
    assert fetch(url) == f.resolve()
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        fetch(url, sha256="0" * 64)
    with pytest.raises(DownloadError, match="no such file"):
        fetch((tmp_path / "gone.jsonl").resolve().as_uri())
    assert not (tmp_path / "cache").exists()  # nothing was copied


def test_an_http_dataset_says_it_uses_the_cached_copy_and_refresh_downloads_it_again(
        http_dir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from scripts import benchmark

    www, base, _ = http_dir
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LEANGYM_SERVER", raising=False)
    rows = [{"name": f"t{i}", "formal_statement": f"theorem t{i} (p : Prop) (hp : p) : p := by sorry"}
            for i in range(3)]
    write_jsonl(www / "rows.jsonl", rows[:2])
    url = f"{base}/rows.jsonl"
    assert _names(load_theorems(url)) == ["t0", "t1"]
    assert "cached" not in capsys.readouterr().err  # a fresh download says nothing

    write_jsonl(www / "rows.jsonl", rows)
    assert _names(load_theorems(url)) == ["t0", "t1"]  # the cached copy, and it says so
    (cached,) = (tmp_path / "cache").iterdir()
    err = capsys.readouterr().err
    assert f"{url}: using the copy cached at {cached}" in err
    assert "refresh=True" in err and "--refresh-dataset" in err
    assert _names(load_theorems(url, refresh=True)) == ["t0", "t1", "t2"]
    assert _names(load_theorems(url)) == ["t0", "t1", "t2"]  # the refreshed copy is the cached one now

    write_jsonl(www / "rows.jsonl", rows[:1])
    out = tmp_path / "r.jsonl"
    argv = ["--agent", "hammer", "--dataset", url, "--sim", "--quiet", "--plot", "none", "--out", str(out)]
    assert benchmark.main(argv) == 0
    assert json.loads(out.read_text(encoding="utf-8").split("\n")[0])["count"] == 3
    assert benchmark.main([*argv, "--refresh-dataset", "--restart"]) == 0
    assert json.loads(out.read_text(encoding="utf-8").split("\n")[0])["count"] == 1


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
    assert _names(load_theorems(root, split="valid")) == ["b"]


def test_minif2f_from_a_directory_of_lean_files(no_shared_copy, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = _lean_project(tmp_path / "miniF2F-lean4")
    monkeypatch.setenv("LEANGYM_MINIF2F", str(root))
    assert minif2f_mod.local_copy() == root
    assert _names(load_theorems("minif2f", split="test")) == ["a"]
    monkeypatch.delenv("LEANGYM_MINIF2F")
    assert _names(load_theorems(f"minif2f:{root}", split="valid")) == ["b"]
    assert _names(load_minif2f(root)) == ["a", "b"]
    assert not (tmp_path / "cache").exists()  # nothing was downloaded


# ------------------------------------------------ .json: a top-level array of rows
def test_a_json_array_of_rows_is_read_and_other_json_says_what_is_expected(tmp_path: Path) -> None:
    arr = tmp_path / "rows.json"
    arr.write_text(json.dumps(ROWS, indent=2, ensure_ascii=False), encoding="utf-8")
    assert _names(load_theorems(arr)) == [r["name"] for r in ROWS]
    assert _names(load_minif2f(arr, split="test")) == ["mathd_algebra_1", "imo_1959_p1"]
    (tmp_path / "one_line.json").write_text(json.dumps(ROWS[:2], ensure_ascii=False), encoding="utf-8")
    assert _names(load_theorems(tmp_path / "one_line.json")) == ["mathd_algebra_1", "aimeI_2000_p7"]

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


def test_a_pinned_minif2f_download_cut_at_a_line_boundary_is_refused(no_shared_copy, http_dir, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a Content-Length a body cut between rows parses row by row: the pinned file's split counts
    are what tells a whole download (it used to be cached and reused as a smaller miniF2F)."""
    www, base, _ = http_dir
    write_jsonl(www / "minif2f.jsonl", ROWS)
    url = f"{base}/minif2f.jsonl"
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", url)
    monkeypatch.setattr(minif2f_mod, "PINNED_URL", url)
    with pytest.raises(DownloadError, match="cut short"):
        load_minif2f()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    whole = {sp: sum(r["split"] == sp for r in ROWS) for sp in ("valid", "test")}
    monkeypatch.setattr(minif2f_mod, "PINNED_COUNTS", whole)
    assert len(load_minif2f()) == len(ROWS)


def test_a_download_over_the_size_limit_is_refused_and_not_cached(http_dir, tmp_path: Path) -> None:
    www, base, _ = http_dir
    write_jsonl(www / "big.jsonl", ROWS * 50)
    with pytest.raises(DownloadError, match="over the limit|limit for a data file"):
        fetch(f"{base}/big.jsonl", cache=tmp_path / "c", max_bytes=1000)
    assert not any((tmp_path / "c").iterdir())


def test_cache_names_are_short_safe_file_names_and_urls_are_recorded_without_secrets() -> None:
    from leangym.datasets.download import cached_path, redacted

    assert len(cached_path("http://h/" + "a" * 300 + ".jsonl").name) < 100
    assert cached_path("http://h/" + "a" * 300 + ".jsonl").name.endswith(".jsonl")
    assert "\x00" not in cached_path("http://h/a%00b.jsonl").name
    assert redacted("https://u:pw@host:8080/x.jsonl?token=SECRET&v=2") == "https://host:8080/x.jsonl?token=…&v=…"
    assert redacted(redacted("http://[::1]:8000/x.jsonl?a=1")) == "http://[::1]:8000/x.jsonl?a=…"
    from scripts.bench_records import recorded  # what a results header keeps of --dataset and argv

    assert recorded("--dataset=https://u:p@h/x.jsonl?token=S") == "--dataset=https://h/x.jsonl?token=…"
    assert recorded("minif2f:https://h/m.jsonl?sig=1") == "minif2f:https://h/m.jsonl?sig=…"
    assert recorded("/data/x.jsonl") == "/data/x.jsonl"


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


def test_a_cut_copy_of_the_pinned_minif2f_already_in_the_cache_is_refused(no_shared_copy, http_dir, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy cached before the whole-download check (or edited since) is held to it too."""
    from leangym.datasets.download import cached_path

    www, base, _ = http_dir
    url = f"{base}/minif2f.jsonl"
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", url)
    monkeypatch.setattr(minif2f_mod, "PINNED_URL", url)
    cached = cached_path(url, tmp_path / "cache")
    cached.parent.mkdir(parents=True)
    write_jsonl(cached, ROWS[:1])
    with pytest.raises(DatasetError, match="delete it, or pass refresh"):
        load_minif2f()


def test_minif2f_of_a_file_url_naming_a_checkout(no_shared_copy, tmp_path: Path) -> None:
    root = tmp_path / "MiniF2F"
    (root / "Test").mkdir(parents=True)
    (root / "Test" / "a.lean").write_text("theorem aime_a (p : Prop) (hp : p) : p := by sorry\n", encoding="utf-8")
    assert [(t.name, t.split) for t in load_theorems(f"minif2f:{root.as_uri()}")] == [("aime_a", "test")]


def test_a_server_trickling_bytes_is_stopped_at_the_download_deadline(tmp_path: Path) -> None:
    """The deadline is checked at each read (not each 64 KiB chunk, which a trickle never fills)."""
    import time
    from http.server import BaseHTTPRequestHandler

    class Trickle(BaseHTTPRequestHandler):
        def log_message(self, *a):  # noqa: ANN002
            pass

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"{")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with pytest.raises(DownloadError, match="still downloading after 1 s"):
            fetch(f"http://127.0.0.1:{httpd.server_address[1]}/x.jsonl", cache=tmp_path / "c", deadline_s=1.0)
    finally:
        httpd.shutdown()
        httpd.server_close()
