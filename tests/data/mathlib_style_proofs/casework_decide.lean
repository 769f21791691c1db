interval_cases x <;> simp_all
-- ===== next =====
interval_cases n <;> omega
-- ===== next =====
have h1 : x ≤ 5 := by linarith
have h2 : 0 ≤ x := by linarith
interval_cases x <;> norm_num at h ⊢
-- ===== next =====
omega
-- ===== next =====
decide
-- ===== next =====
norm_num
-- ===== next =====
norm_num [Nat.factorial]
-- ===== next =====
norm_num [Nat.choose, Nat.factorial]
-- ===== next =====
rfl
-- ===== next =====
decide +kernel
-- ===== next =====
decide (config := { kernel := true })
-- ===== next =====
exact h₀
-- ===== next =====
exact by decide
-- ===== next =====
norm_num [Nat.Prime]
-- ===== next =====
norm_num [Finset.sum_range_succ]
-- ===== next =====
intro n hn
omega
-- ===== next =====
rcases h with ⟨k, rfl⟩
omega
-- ===== next =====
fin_cases x <;> simp
-- ===== next =====
mod_cases h : n % 3
· simp [Nat.ModEq] at h ⊢; omega
· simp [Nat.ModEq] at h ⊢; omega
· simp [Nat.ModEq] at h ⊢; omega
-- ===== next =====
have : n % 4 < 4 := Nat.mod_lt _ (by norm_num)
interval_cases h : n % 4 <;> simp [h, Nat.pow_mod]
-- ===== next =====
rcases Nat.even_or_odd n with ⟨k, rfl⟩ | ⟨k, rfl⟩ <;> ring_nf <;> omega
-- ===== next =====
norm_num [Int.emod_emod_of_dvd]
-- ===== next =====
unfold f
norm_num
-- ===== next =====
simp only [Finset.card_range]
-- ===== next =====
have h3 : #s ≤ 4 := by omega
omega
-- ===== next =====
rw [Finset.card_eq_three]
exact ⟨1, 2, 3, by decide, by decide, by decide, rfl⟩
-- ===== next =====
norm_num [Nat.gcd_comm]
-- ===== next =====
decide
-- Lean evaluates it by kernel reduction; "decide" is fine here
-- ===== next =====
all_goals omega
-- ===== next =====
any_goals simp
-- ===== next =====
repeat rw [pow_succ]
ring
-- ===== next =====
first
| omega
| linarith
| nlinarith
-- ===== next =====
try norm_num
linarith
-- ===== next =====
exacts [h₀, h₁]
-- ===== next =====
omega -- this closes it: "omega" handles linear ℕ arithmetic
-- ===== next =====
norm_num [show (2 : ℝ) ≠ 0 by norm_num]
