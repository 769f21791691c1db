calc a ^ 2 + b ^ 2 = (a + b) ^ 2 - 2 * a * b := by ring
  _ = 25 - 2 * 6 := by rw [h₀, h₁]; norm_num
  _ = 13 := by norm_num
-- ===== next =====
calc
  f 3 = 2 * 3 + 1 := h 3
  _ = 7 := by norm_num
-- ===== next =====
calc (x + y) ^ 2 = x ^ 2 + 2 * x * y + y ^ 2 := by ring
  _ ≥ 4 * x * y := by nlinarith [sq_nonneg (x - y)]
-- ===== next =====
have h : 0 ≤ (a - b) ^ 2 := sq_nonneg _
calc a * b ≤ (a ^ 2 + b ^ 2) / 2 := by nlinarith [h]
  _ ≤ 1 := by linarith
-- ===== next =====
constructor
· linarith
· nlinarith [sq_nonneg x]
-- ===== next =====
constructor
· intro h
  linarith
· intro h
  nlinarith
-- ===== next =====
refine ⟨?_, ?_⟩
· norm_num
· norm_num [Nat.factorial]
-- ===== next =====
constructor <;> norm_num
-- ===== next =====
constructor
· -- forward direction
  rintro ⟨h1, h2⟩
  exact ⟨h2, h1⟩
· -- backward direction
  rintro ⟨h1, h2⟩
  exact ⟨h2, h1⟩
-- ===== next =====
refine ⟨2, by norm_num, ?_⟩
norm_num
-- ===== next =====
use 3
norm_num
-- ===== next =====
use 1, 2
constructor <;> norm_num
-- ===== next =====
apply And.intro
· exact h₀
· linarith [h₁]
-- ===== next =====
rcases h with ⟨x, hx⟩
exact ⟨x + 1, by linarith⟩
-- ===== next =====
calc (2 : ℝ) ^ 10 = 1024 := by norm_num
  _ > 1000 := by norm_num
-- ===== next =====
calc
  _ = (a + b) * (a - b) := by ring
  _ = 3 * 1 := by rw [h₀, h₁]
  _ = 3 := by norm_num
-- ===== next =====
by_cases h : x ≤ 0
· -- case x ≤ 0
  rw [abs_of_nonpos h]
  linarith
· -- case x > 0
  push_neg at h
  rw [abs_of_pos h]
  linarith
-- ===== next =====
rcases le_or_lt 0 x with hx | hx
· rw [abs_of_nonneg hx]; linarith
· rw [abs_of_neg hx]; linarith
-- ===== next =====
cases' le_total a b with hab hab
· simp [max_eq_right hab, min_eq_left hab]
· simp [max_eq_left hab, min_eq_right hab]
-- ===== next =====
constructor
all_goals norm_num
-- ===== next =====
refine ⟨fun h => ?_, fun h => ?_⟩
· linarith
· linarith
-- ===== next =====
ext x
simp only [Set.mem_setOf_eq, Set.mem_Icc]
constructor
· rintro ⟨h1, h2⟩
  constructor <;> linarith
· rintro ⟨h1, h2⟩
  constructor <;> linarith
-- ===== next =====
apply le_antisymm
· apply h₀
· apply h₁
-- ===== next =====
intro x hx
cases hx with
| inl h => left; linarith
| inr h => right; linarith
-- ===== next =====
induction n with
| zero => simp
| succ n ih =>
  rw [Finset.sum_range_succ, ih]
  ring
