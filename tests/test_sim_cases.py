"""Case analysis in the simulator as Lean's RCases does it (rcases / obtain patterns, from Lean's source)."""
from __future__ import annotations

import pytest

from test_sim_kernel import T_OR, Session, data_of


@pytest.fixture
def s():
    return Session()


def test_rcases_alternatives_on_a_structure_go_to_its_first_field(s):
    stmt = "theorem t (p q r : Prop) (h : (p ∨ q) ∧ r) : r := by sorry"
    assert s.steps(stmt, "rcases h with a | b") == (
        "case intro.inl\np q r : Prop\nright✝ : r\na : p\n⊢ r\n\ncase intro.inr\np q r : Prop\nright✝ : r\nb : q\n⊢ r")


def test_nested_patterns_add_fields_in_leans_order(s):
    """Lean's rcases does one `cases` (every field joins the context), then takes the fields with patterns
    of their own apart in turn, their parts added at the end: `⟨⟨a, b⟩, c⟩` leaves `c`, `a`, `b`."""
    stmt = "theorem t (p q r : Prop) (h : (p ∧ q) ∧ r) : r := by sorry"
    assert s.steps(stmt, "obtain ⟨⟨a, b⟩, c⟩ := h") == "case intro.intro\np q r : Prop\nc : r\na : p\nb : q\n⊢ r"
    assert s.steps(stmt, "rcases h with ⟨a, -⟩") == "case intro\np q r : Prop\na : p ∧ q\n⊢ r"
    stmt = "theorem t (p q r : Prop) (h : p ∧ q ∧ r) : r := by sorry"
    assert s.steps(stmt, "obtain ⟨a, b, c⟩ := h") == "case intro.intro\np q r : Prop\na : p\nb : q\nc : r\n⊢ r"


def test_a_plain_name_for_a_local_hypothesis_binds_nothing(s):
    """Lean generalizes only a term that is not a local already: `obtain x := h` leaves `h` as it is."""
    stmt = "theorem t (p q : Prop) (h : p ∧ q) : q := by sorry"
    assert s.steps(stmt, "obtain x := h") == "p q : Prop\nh : p ∧ q\n⊢ q"
    assert s.steps(stmt, "rcases h with _") == "p q : Prop\nh : p ∧ q\n⊢ q"
    assert "unknown identifier 'x" in data_of(s.err(s.ok(s.start(stmt), "obtain x := h")[0], "exact x.2"))


def test_rcases_without_a_pattern_does_one_cases(s):
    assert s.steps("theorem t (p q : Prop) (h : p ∧ q) : q := by sorry", "rcases h") == (
        "case intro\np q : Prop\nleft✝ : p\nright✝ : q\n⊢ q")
    assert s.steps(T_OR, "intro h", "rcases h") == (
        "case inl\np q : Prop\nh✝ : p\n⊢ q ∨ p\n\ncase inr\np q : Prop\nh✝ : q\n⊢ q ∨ p")
    assert s.steps(T_OR, "intro h", "rcases h with ⟨⟩") == s.steps(T_OR, "intro h", "rcases h")
    assert s.steps(T_OR, "intro h", "rcases h with ⟨a⟩ | ⟨b⟩", "exact Or.inr a", "exact Or.inl b") == "no goals"


def test_obtain_with_a_type_on_a_local_hypothesis_clears_it_as_without(s):
    """Lean's RCases does not generalize a local hypothesis under a type ascription either: the pattern
    applies to `h` itself (its type replaced by the defeq ascription), so `cases` clears it."""
    stmt = "theorem t (p q : Prop) (h : p ∧ q) : q := by sorry"
    assert s.steps(stmt, "obtain ⟨a, b⟩ : p ∧ q := h") == "case intro\np q : Prop\na : p\nb : q\n⊢ q"
    assert s.steps(stmt, "obtain x : p ∧ q := h") == "p q : Prop\nh : p ∧ q\n⊢ q"
    stmt = "theorem t (p : Prop) (h : ¬p) (hp : p) : False := by sorry"
    assert s.steps(stmt, "obtain x : p → False := h") == "p : Prop\nh : p → False\nhp : p\n⊢ False"
