"""leangym.goal_key: states one for a search up to case tags, names, and unused repeated hypotheses."""
from leangym.backends.types import Goal, Hypothesis, ProofState
from leangym.goal_key import alpha_key, names_a_tag, table_key


def state(hyps, target, tag=None):
    return ProofState(0, 0, (Goal(tuple(Hypothesis(*h) for h in hyps), target, tag),))


X = "¬(¬q ∧ (q ∨ False) ∨ False) → r"
PQR = [("p", "Prop"), ("q", "Prop"), ("r", "Prop")]


def test_tags_are_dropped_from_the_table_key_only_names_from_the_alpha_key():
    a, b = state(PQR + [("h₃", X)], "r", "right"), state(PQR + [("h₃", X)], "r", "right.right")
    assert table_key(a) == table_key(b) == "p q r : Prop\nh₃ : " + X + "\n⊢ r" != a.text
    renamed = state([("a", "Prop"), ("b", "Prop"), ("c", "Prop"), ("h", X.replace("q", "b").replace("r", "c"))], "c")
    assert alpha_key(renamed) == alpha_key(a) and table_key(renamed) != table_key(a)


def test_a_repeated_hypothesis_counts_only_when_something_uses_it():
    once = state(PQR + [("h₃", X)], "r")
    assert alpha_key(state(PQR + [("h₃", X), ("h₄", X)], "r")) == alpha_key(once)
    assert alpha_key(state([("x", "ℕ"), ("y", "ℕ")], "x + y = y + x")) != alpha_key(state([("x", "ℕ")], "x + x = x + x"))
    # an unused variable is dropped, one a later hypothesis names is not
    assert alpha_key(state([("x", "ℕ"), ("y", "ℕ")], "x = x")) == alpha_key(state([("x", "ℕ")], "x = x"))
    assert alpha_key(state([("x", "ℕ"), ("y", "ℕ"), ("h", "y > 0")], "x = x")) != alpha_key(state([("x", "ℕ")], "x = x"))


def test_names_are_renamed_as_names_only():
    # a local's field (`x.succ`) is the local's; a global's dotted name (`Nat.succ`) and names that merely
    # contain a local's (`xs`) are not; a string literal keeps its names: no two different states meet
    assert alpha_key(state([("x", "ℕ")], "x.succ = Nat.succ x")) == alpha_key(state([("y", "ℕ")], "y.succ = Nat.succ y"))
    assert alpha_key(state([("x", "ℕ")], "xs = x")) != alpha_key(state([("y", "ℕ")], "xs = x"))
    assert alpha_key(state([("a", "String")], 'a = "a"')) != alpha_key(state([("b", "String")], 'b = "b"'))
    # let values are renamed and never dropped as repeats
    let = state([("n", "ℕ"), ("m", "ℕ", "n + 1"), ("k", "ℕ", "n + 1")], "m = k")
    assert alpha_key(let).count(":=") == 2 and "n" not in alpha_key(let).replace("\n", " ").split()


def test_several_goals_and_no_goals():
    two = ProofState(0, 0, (Goal((Hypothesis("h", "p"),), "p", "a"), Goal((Hypothesis("g", "p"),), "p", "b")))
    # several goals keep their tags in the table key: a tag may name a goal that `case` picks, or a metavariable
    assert alpha_key(two).count("⊢") == 2 and table_key(two) == two.text
    assert alpha_key(ProofState(0, 0, ())) == table_key(ProofState(0, 0, ())) == "no goals"


def test_an_inaccessible_name_is_a_name_of_its_own_and_stays_inaccessible():
    # `n✝` is used by the target: kept (dropping it made ℕ and ℤ one state: n - 1 + 1 ≠ 0 holds in ℕ only)
    nat, int_ = ("a", "ℕ"), ("b", "ℤ")
    goal = "n✝ - 1 + 1 ≠ 0"
    assert alpha_key(state([nat, int_, ("n✝", "ℕ")], goal)) != alpha_key(state([nat, int_, ("n✝", "ℤ")], goal))
    def shadowed(type_):  # ... and no `x` either when an `x` shadows it
        return state([nat, int_, ("x✝", type_), ("x", "ℤ")], "x✝ - 1 + 1 ≠ x")
    assert alpha_key(shadowed("ℕ")) != alpha_key(shadowed("ℤ"))
    # renamed as a whole, superscripts included: `x✝¹` and `y✝¹` are one
    def two(x):
        return alpha_key(state([(f"{x}✝¹", "ℕ"), (f"{x}✝", "ℕ")], f"{x}✝¹ < {x}✝"))
    assert two("x") == two("y")
    # `intro` and `intro h` differ: a tactic can cite `h`, never `a✝` (else `intro h` is refused after `intro`,
    # and `rename_i h` leads back to its own state)
    def key(*hyps):
        return alpha_key(state([(n, "p") for n in hyps], "q"))
    assert key("a✝") != key("h")
    # of the copies of a hypothesis nothing uses, one that can be cited stays, wherever it is (`intro h₃` when
    # `h₃` already says the same: the old `h₃✝` adds nothing)
    assert key("h", "a✝") == key("h") == key("a✝", "h") != key("a✝") == key("a✝", "b✝")


def test_a_let_value_uses_the_names_it_starts_with():
    # `n` only in the value, first (the type and value once read as one word `ℕn`): n stays, and stays renamed
    def let(n_type):
        return state([("a", "ℕ"), ("b", "ℤ"), ("n", n_type), ("k", "Prop", "n - 1 + 1 ≠ 0")], "k")
    assert alpha_key(let("ℕ")) != alpha_key(let("ℤ"))
    assert "n" not in alpha_key(let("ℕ")).replace("\n", " ").split()


def test_fields_metavariables_and_characters_are_no_locals():
    # `(f h).h`: the field `h`, not the local; `?x` and `'x'` are no `x` either
    assert alpha_key(state([("h", "ℕ")], "(f h).h = 0")) != alpha_key(state([("g", "ℕ")], "(f g).g = 0"))
    assert alpha_key(state([("h", "ℕ")], "(f h).h = 0")) == alpha_key(state([("g", "ℕ")], "(f g).h = 0"))
    assert alpha_key(state([("x", "ℕ")], "?x = x")) != alpha_key(state([("y", "ℕ")], "?y = y"))
    x, y = state([("x'", "Char")], "'x'.toNat = 120"), state([("y'", "Char")], "'y'.toNat = 120")
    assert alpha_key(x) != alpha_key(y)


def test_a_tactic_that_picks_its_goal_by_tag():
    assert names_a_tag("case left => exact hp") and names_a_tag("case' h.right => simp")
    assert names_a_tag("constructor <;> case left => rfl") and names_a_tag("case\n  left => rfl")
    assert not any(map(names_a_tag, ["case _ => simp", "case  _ x => simp", "cases h", "rcases h with ⟨a, b⟩",
                                     "exact Or.case x", "next => rfl"]))


def test_a_name_left_as_it_is_where_used_is_left_so_where_declared():
    # a string literal's text, or `«a b»`, keeps its names: renaming the hypothesis alone made x : ℕ and x : ℤ one
    # (x - 1 + 1 = x holds in ℤ only)
    for x, goal in [("x", 'x - 1 + 1 = x ∨ "s" = "t"'), ("«a b»", "«a b» - 1 + 1 = «a b»")]:
        assert alpha_key(state([(x, "ℕ"), ("y", "ℤ")], goal)) != alpha_key(state([("y", "ℕ"), (x, "ℤ")], goal))
        hyp = [("h", goal.replace("∨", "→"))]
        assert alpha_key(state([(x, "ℕ"), ("y", "ℤ")] + hyp, "False")) != alpha_key(state([("y", "ℕ"), (x, "ℤ")] + hyp, "False"))
    # names the literal's text does not hold are still renamed
    assert alpha_key(state([("x", "ℕ")], 'x = 0 ∧ "s" = "s"')) != alpha_key(state([("y", "ℕ")], 'y = 0 ∧ "s" = "s"'))
    assert alpha_key(state([("x", "ℕ"), ("h", "x = 0")], '"s" = "s"')) == alpha_key(state([("y", "ℕ"), ("g", "y = 0")], '"s" = "s"'))

