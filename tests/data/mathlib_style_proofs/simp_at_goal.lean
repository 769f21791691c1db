simp only [Finset.sum_range_succ, Finset.sum_range_zero] at h ⊢
linarith
-- ===== next =====
simp only [mul_comm, mul_assoc, mul_left_comm] at h₀ ⊢
exact h₀
-- ===== next =====
simp at h
omega
-- ===== next =====
simp [h₀, h₁]
-- ===== next =====
simp_all
-- ===== next =====
simp only [Nat.add_sub_cancel] at *
omega
-- ===== next =====
norm_num at h ⊢
linarith
-- ===== next =====
simp only [sq, mul_add, add_mul] at h ⊢
nlinarith
-- ===== next =====
rw [h₀] at h₁
simp at h₁
exact h₁
-- ===== next =====
simp [Finset.sum_range_succ]
-- ===== next =====
simp only [Finset.mem_filter, Finset.mem_range] at hx ⊢
omega
-- ===== next =====
simp [div_eq_iff, mul_comm]
-- ===== next =====
simp only [Set.mem_setOf_eq]
intro x hx
nlinarith [hx]
-- ===== next =====
rw [Finset.sum_comm]
-- ===== next =====
simp (config := { decide := true })
-- ===== next =====
simp +decide
-- ===== next =====
simp [pow_succ] at h ⊢ <;> linarith
-- ===== next =====
rw [← sub_eq_zero]
ring_nf
simp
-- ===== next =====
rw [show (4 : ℝ) = 2 ^ 2 by norm_num] at h
simp at h
-- ===== next =====
simp only [Nat.Prime] at hp
exact hp.2
-- ===== next =====
rw [Real.sqrt_eq_iff_mul_self_eq] <;> norm_num
-- ===== next =====
simp_rw [mul_comm]
-- ===== next =====
conv => lhs; rw [h₀]
-- ===== next =====
rw [div_add_div _ _ (by norm_num) (by norm_num)]
norm_num
-- ===== next =====
simp only [Function.comp_apply, h₀, h₁]
