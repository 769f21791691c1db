have h₁ : x = 3 := by linarith
have h₂ : y = 5 := by
  rw [h₁] at h₀
  linarith
rw [h₁, h₂]
norm_num
-- ===== next =====
have h : 2 * x = 10 := by linarith
have hx : x = 5 := by linarith
subst hx
norm_num
-- ===== next =====
have h3 : (n : ℤ) % 4 = 0 ∨ (n : ℤ) % 4 = 1 ∨ (n : ℤ) % 4 = 2 ∨ (n : ℤ) % 4 = 3 := by omega
rcases h3 with (h | h | h | h) <;> simp [h, pow_two, Int.add_emod, Int.mul_emod]
-- ===== next =====
have h₀' : a ≠ 0 := by
  intro ha
  rw [ha] at h₀
  norm_num at h₀
field_simp
ring
-- ===== next =====
have hpos : 0 < x ^ 2 + 1 := by positivity
have hne : x ^ 2 + 1 ≠ 0 := ne_of_gt hpos
field_simp
ring
-- ===== next =====
have : (2 : ℝ) ≤ 3 := by norm_num
linarith
-- ===== next =====
have h1 := h 0
have h2 := h 1
simp at h1 h2
linarith
-- ===== next =====
have h₅ : f 1 = 3 := by
  have := h₀ 1
  norm_num at this
  linarith
rw [h₅]
-- ===== next =====
have hmod : n % 2 = 0 ∨ n % 2 = 1 := Nat.mod_two_eq_zero_or_one n
rcases hmod with h | h
· -- n is even
  simp [Nat.pow_mod, h]
· -- n is odd
  simp [Nat.pow_mod, h]
-- ===== next =====
have h3 : x ≠ 0 := by
  rintro rfl
  simp at h₁
have h4 : y = 1 / x := by
  field_simp
  linarith
rw [h4]
-- ===== next =====
have h : ∀ n : ℕ, f n = 2 * n + 1 := by
  intro n
  induction n with
  | zero => simp [h₀]
  | succ k ih => rw [h₁, ih]; ring
rw [h]
-- ===== next =====
have hx2 : x ^ 2 = 4 := by nlinarith
have : x = 2 ∨ x = -2 := by
  have h' : (x - 2) * (x + 2) = 0 := by ring_nf; linarith
  rcases mul_eq_zero.mp h' with h | h
  · left; linarith
  · right; linarith
rcases this with rfl | rfl <;> norm_num
-- ===== next =====
have hab : a + b = 7 := by linarith
have hab' : a * b = 12 := by nlinarith
nlinarith [sq_nonneg (a - b)]
-- ===== next =====
obtain ⟨k, hk⟩ := h
subst hk
ring_nf
omega
-- ===== next =====
obtain ⟨x, hx, hx'⟩ := h₀
exact ⟨x, hx, by linarith⟩
-- ===== next =====
have h₁ : (3 : ℝ) ^ 2 = 9 := by norm_num
have h₂ : Real.sqrt 9 = 3 := by
  rw [show (9 : ℝ) = 3 ^ 2 by norm_num]
  exact Real.sqrt_sq (by norm_num)
rw [h₂]
-- ===== next =====
have h : (x + 1) * (x - 1) = x ^ 2 - 1 := by ring
rw [h] at h₀
linarith
-- ===== next =====
have := h₀.1
have := h₀.2
linarith
-- ===== next =====
-- Step 1: reduce modulo 7.
have h7 : (2 ^ 100) % 7 = 2 := by norm_num
-- Step 2: conclude.
exact h7
-- ===== next =====
have hb : b = 2 * a := by linarith
subst hb
ring
-- ===== next =====
have h1 : 0 < a * b := mul_pos ha hb
have h2 : 0 < a + b := add_pos ha hb
rw [div_add_div _ _ (ne_of_gt ha) (ne_of_gt hb), le_div_iff (mul_pos ha hb)]
nlinarith [sq_nonneg (a - b)]
-- ===== next =====
-- We use the "instance" of `Fact (1 < 2)` here; the local "open" namespace is not needed.
have h : (1 : ℕ) < 2 := by norm_num
exact h
-- ===== next =====
/- Proof sketch: "open" the square, then the local bound gives it.
   See the `example` in the docs for the "instance" argument. -/
nlinarith [sq_nonneg (x - y)]
