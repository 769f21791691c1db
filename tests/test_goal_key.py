"""leangym.goal_key: states one for a search up to case tags, names, and unused repeated hypotheses."""
from leangym.backends.types import Goal, Hypothesis, ProofState
from leangym.goal_key import alpha_key, table_key


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
    assert alpha_key(two).count("⊢") == 2 and table_key(two) == "h : p\n⊢ p\n\ng : p\n⊢ p"
    assert alpha_key(ProofState(0, 0, ())) == table_key(ProofState(0, 0, ())) == "no goals"
