"""Theorem sets read from Lean source: one theorem per .lean file, Test/Valid directories, comments and
strings, namespaces and sections (compfiles), PutnamBench forms and one-line modifiers, `example`s."""
from __future__ import annotations

from pathlib import Path

import pytest

from leangym.datasets import DatasetError, load_minif2f, load_theorems
from leangym.sim.local import LocalProcess
from leangym.soundness import SoundnessPolicy, verify


def test_lean_directory(tmp_path: Path) -> None:
    root = tmp_path / "MiniF2F"
    (root / "Test").mkdir(parents=True)
    (root / "Valid").mkdir()
    (root / "Test" / "a.lean").write_text(
        "import Mathlib\nopen Nat\n\n/-- doc -/\ntheorem thm_a (n : ℕ) : n + 0 = n := by sorry\n", encoding="utf-8")
    (root / "Valid" / "b.lean").write_text("theorem thm_b : True := by\n  sorry\n", encoding="utf-8")
    both = load_theorems(root)
    assert [(t.name, t.split) for t in both] == [("thm_a", "test"), ("thm_b", "valid")]
    (a,) = load_theorems(root, split="test")
    assert a.header.startswith("import Mathlib\nopen Nat") and a.preamble.startswith("open Nat")
    assert a.formal_statement == "theorem thm_a (n : ℕ) : n + 0 = n := by sorry"
    assert load_theorems(root / "Valid" / "b.lean")[0].name == "thm_b"

    # a file of several theorems in a split's folder is of that split too (it used to take its own name:
    # a second theorem moved a held-out file into training); elsewhere its own name, as miniF2F-lean4's
    # older `MiniF2F/Test.lean` is test
    (root / "Test" / "two.lean").write_text("theorem x : True := by sorry\ntheorem y : True := by sorry\n")
    assert [(t.name, t.split) for t in load_theorems(root)] == [("thm_a", "test"), ("x", "test"), ("y", "test"),
                                                                ("thm_b", "valid")]
    (root / "Test" / "two.lean").write_text("theorem x : True := by sorry\ntheorem thm_a : True := by sorry\n")
    with pytest.raises(DatasetError, match="duplicate theorem name 'thm_a'"):
        load_theorems(root)
    # a file whose declarations are all proved holds nothing to prove: skipped in a directory, an error alone
    (root / "Test" / "two.lean").write_text("open Nat\n\ntheorem x : True := trivial\n")
    assert [t.name for t in load_theorems(root)] == ["thm_a", "thm_b"]
    with pytest.raises(DatasetError, match=r"two\.lean: no theorem/lemma/example ending in ':= by sorry' "
                                           r"\(found 1 declaration, none a statement to prove\)"):
        load_theorems(root / "Test" / "two.lean")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no .lean files"):
        load_theorems(tmp_path / "empty")
    (tmp_path / "empty" / "minif2f_lean4.jsonl").write_text("")  # a miniF2F folder ($LEANGYM_MINIF2F takes it)
    with pytest.raises(DatasetError, match="pass the file itself: .*minif2f_lean4.jsonl"):
        load_theorems(tmp_path / "empty")


def test_lean_files_comments_and_project_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "MiniF2F" / "Test").mkdir(parents=True)
    (root / "Main.lean").write_text("import MiniF2F\n\ndef main : IO Unit := pure ()\n", encoding="utf-8")
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage minif2f\n", encoding="utf-8")
    (root / "MiniF2F" / "Test" / "a.lean").write_text(
        "import Mathlib\n/- theorem old : False := by sorry\n  /- nested -/ -/\n"
        "theorem a (n : ℕ) : n + 0 = n := by sorry -- theorem later, maybe\n", encoding="utf-8")
    (t,) = load_theorems(root)  # Main.lean and lakefile.lean hold no theorem: skipped
    assert t.name == "a" and t.split == "test" and t.formal_statement == "theorem a (n : ℕ) : n + 0 = n := by sorry"
    assert [t.name for t in load_minif2f(root)] == ["a"]  # miniF2F as .lean files (a miniF2F-lean4 checkout)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(DatasetError, match="a directory without minif2f_lean4.jsonl or .lean files"):
        load_minif2f(tmp_path / "nothing")


def test_compfiles_style_namespace_file(tmp_path: Path) -> None:
    """`namespace X ... theorem ... end X`: the closer is no part of the statement, the opener stays in
    the header, so the theorem is declared as X.name both for proof_from_sorry and in the final check."""
    from leangym.sim.local import LocalProcess
    from leangym.soundness import SoundnessPolicy, verify

    f = tmp_path / "Imo1959P1.lean"
    f.write_text("import Mathlib\n\nnamespace Imo1959P1\n\n/-- doc -/\n"
                 "theorem imo1959_p1 (p : Prop) (hp : p) : p := by\n  sorry\n\nend Imo1959P1\n", encoding="utf-8")
    (t,) = load_theorems(f)
    assert t.name == t.decl_name == "imo1959_p1"
    assert t.formal_statement == "theorem imo1959_p1 (p : Prop) (hp : p) : p := by sorry"
    assert t.header == "import Mathlib\n\nnamespace Imo1959P1\n\n/-- doc -/\n"
    assert t.source_with_sorry == f"\nnamespace Imo1959P1\n\n/-- doc -/\n{t.formal_statement}"
    process = LocalProcess()
    assert process.start_proof(t.source_with_sorry).goals[0].target == "p"
    name = t.check_name("_leangym_ab12")
    answer = process.run_command(t.renamed(name).source_with_proof("exact hp") + f"\n#print axioms {name}\n")
    assert [m.text for m in answer.messages] == ["'Imo1959P1.imo1959_p1_leangym_ab12' does not depend on any axioms"]
    assert verify(LocalProcess(), t, "exact hp", SoundnessPolicy()).ok

    # sections too, closed innermost first (the simulator has no `section`: text only)
    f.write_text("namespace A.B\nsection\nnoncomputable section Inner\ntheorem t : True := by sorry\n"
                 "end Inner\nend -- the anonymous section\nend A.B\n", encoding="utf-8")
    assert load_theorems(f)[0].formal_statement == "theorem t : True := by sorry"

    # what follows a statement's `sorry` is not part of it, whatever it is
    f.write_text("namespace A\ntheorem t : True := by sorry\nend B\n", encoding="utf-8")
    (t,) = load_theorems(f)
    assert t.formal_statement == "theorem t : True := by sorry" and t.header == "namespace A\n"


def test_a_file_of_several_theorems_gives_each_its_context(tmp_path: Path) -> None:
    """Each statement's header: the file's text before the first declaration, then everything between
    the earlier ones that is not a statement (a proved lemma it may cite, `open`, `namespace`/`end`)."""
    f = tmp_path / "Test.lean"
    f.write_text("import Mathlib\nopen Nat\n\n"
                 "theorem a (p : Prop) (hp : p) : p := by sorry\n\n"
                 "lemma helper (q : Prop) (h : q) : q := by\n  exact h\n\n"
                 "open Real\n\n"
                 "theorem b (p : Prop) (hp : p) : p :=\n  by sorry\n\n"
                 "example : True := by sorry\nexample : 1 = 1 := by\nsorry\n", encoding="utf-8")
    a, b, e1, e2 = load_theorems(f)
    assert [t.name for t in (a, b, e1, e2)] == ["a", "b", "Test_1", "Test_2"]
    assert a.header == "import Mathlib\nopen Nat\n\n"
    assert b.header == a.header + "\n\nlemma helper (q : Prop) (h : q) : q := by\n  exact h\n\nopen Real\n\n"
    assert b.formal_statement == "theorem b (p : Prop) (hp : p) : p := by sorry"
    assert "theorem b" not in e1.header and "example" not in e2.header  # other statements never join a header
    assert verify(LocalProcess(), b, "exact helper p hp", SoundnessPolicy()).ok  # the lemma is b's context
    # a proof that goes on after a `sorry` is no statement: it is context, and a header must not use sorry
    f.write_text("theorem half_done (p : Prop) (hp : p) : p := by\n  have h : p := sorry\n  exact h\n\n"
                 "theorem c : True := by sorry\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"Test\.lean:5: the header contains 'sorry'"):
        load_theorems(f)


def test_a_directory_of_examples_is_named_after_the_files(tmp_path: Path) -> None:
    (tmp_path / "Test").mkdir()
    (tmp_path / "Test" / "p1.lean").write_text("import Mathlib\n\nexample (a : ℕ) : a = a := by sorry\n")
    (tmp_path / "Test" / "p2.lean").write_text("import Mathlib\n\nexample (b : ℕ) : b = b := by\n  sorry\n")
    (tmp_path / "Test" / "2021 amc.lean").write_text("example : True := by sorry\n")
    theorems = load_theorems(tmp_path)
    assert [(t.name, t.decl_name) for t in theorems] == [("2021 amc", "«2021 amc»"), ("p1", "p1"), ("p2", "p2")]
    assert theorems[1].formal_statement == "theorem p1 (a : ℕ) : a = a := by sorry"


def test_lean_file_forms_putnambench_and_one_line_modifiers(tmp_path: Path) -> None:
    forms = {
        "putnam.lean": ("import Mathlib\nopen Real\n\ntheorem putnam_x (n : ℕ) : n = n :=\nsorry\n",
                        "theorem putnam_x (n : ℕ) : n = n := by sorry"),
        "open_in.lean": ("import Mathlib\n\nopen Real in theorem o (x : ℝ) : x = x := by sorry\n",
                         "open Real in theorem o (x : ℝ) : x = x := by sorry"),
        "nc.lean": ("/-- doc -/ noncomputable theorem nc : True := by sorry\n",
                    "noncomputable theorem nc : True := by sorry"),
        "attr.lean": ('@[to_additive "text [x]"]\ntheorem at1 : True := by sorry\n',
                      '@[to_additive "text [x]"]\ntheorem at1 : True := by sorry'),
    }
    for file, (text, statement) in forms.items():
        (tmp_path / file).write_text(text, encoding="utf-8")
        (t,) = load_theorems(tmp_path / file)
        assert t.formal_statement == statement, file
    stub = tmp_path / "putnam_stub.lean"
    stub.write_text("import Mathlib\n\nabbrev putnam_s_solution : ℕ := sorry\n\n"
                    "theorem putnam_s : putnam_s_solution = 2 := sorry\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"putnam_stub\.lean:5: the header contains 'sorry'.*fill in the solution"):
        load_theorems(stub)


def test_comment_markers_inside_strings_are_not_comments(tmp_path: Path) -> None:
    f = tmp_path / "s.lean"
    f.write_text('theorem s (x : String) (h : x = "--") (h2 : x ≠ "/-") (h3 : x ≠ "a\\"b") :\n'
                 '  x.length = 2 := by sorry -- a remark\n', encoding="utf-8")
    (t,) = load_theorems(f)
    assert t.formal_statement == ('theorem s (x : String) (h : x = "--") (h2 : x ≠ "/-") (h3 : x ≠ "a\\"b") :\n'
                                  '  x.length = 2 := by sorry')
    f.write_text('import Mathlib\ndef marker := "theorem fake : False := by sorry"\n'
                 'theorem real : True := by sorry\n', encoding="utf-8")
    assert [t.name for t in load_theorems(f)] == ["real"]


def test_a_statement_ends_at_its_own_assignment(tmp_path: Path) -> None:
    """Round five: a `:= by sorry` in a binder's default value, or in a column-0 `have` of a proof, is not
    where a statement ends."""
    f = tmp_path / "t.lean"
    f.write_text("theorem d (p : Prop) (hp : p := by sorry) : p := by sorry\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"contains 'sorry' outside its final.*\(hp : p := by sorry\) : p := by sorry'"):
        load_theorems(f)  # the whole statement is read (and refused: it uses sorry), not its first 35 characters
    f.write_text("theorem b (p : Prop) (hp : p) : p := by\nhave h : p := by sorry\nexact h\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="none a statement to prove"):
        load_theorems(f)


def test_a_let_or_have_in_the_type_keeps_its_own_assignment(tmp_path: Path) -> None:
    """Review: `: let y := 2; y = 2 := by sorry` ends at its second top-level `:=`, not its first."""
    f = tmp_path / "t.lean"
    f.write_text("theorem a2 : let y := 2; y = 2 := by sorry\n\n"
                 "theorem b (p : Prop) (hp : p) : have q := p; q := by sorry\n\n"
                 "theorem tablet (x : ℕ) : x = x := by sorry\n", encoding="utf-8")
    assert [t.formal_statement for t in load_theorems(f)] == [
        "theorem a2 : let y := 2; y = 2 := by sorry", "theorem b (p : Prop) (hp : p) : have q := p; q := by sorry",
        "theorem tablet (x : ℕ) : x = x := by sorry"]


def test_a_statement_keeps_its_inner_comments_as_its_jsonl_copy_does(tmp_path: Path) -> None:
    """A miniF2F checkout and the JSONL must give one statement (its hash keys comparisons and rechecks):
    comments inside a statement used to be blanked to spaces in the .lean form."""
    stmt = "theorem t (n : ℕ)\n  -- note: we use this form\n  (h : n = 1) : n = 1 := by sorry"
    (tmp_path / "t.lean").write_text(f"import Mathlib\n\n/-- doc -/\n{stmt} -- trailing\n", encoding="utf-8")
    (t,) = load_theorems(tmp_path / "t.lean")
    assert t.formal_statement == stmt


def test_a_file_url_names_a_directory_or_a_lean_file_as_a_path_does(tmp_path: Path) -> None:
    (tmp_path / "t.lean").write_text("theorem t (p : Prop) (hp : p) : p := by sorry\n", encoding="utf-8")
    assert [t.name for t in load_theorems(tmp_path.as_uri())] == ["t"]
    assert [t.name for t in load_theorems((tmp_path / "t.lean").as_uri())] == ["t"]


def test_a_linked_folder_is_read_once_and_a_link_loop_ends(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "sub"
    outside.mkdir(parents=True)
    (outside / "o.lean").write_text("theorem o (p : Prop) (hp : p) : p := by sorry\n", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (outside / "loop").symlink_to(outside, target_is_directory=True)
    assert [t.name for t in load_theorems(root)] == ["o"]
