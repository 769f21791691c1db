field_simp
ring
-- ===== next =====
field_simp [hx, hy]
ring
-- ===== next =====
have hx : x ≠ 0 := by linarith
field_simp
nlinarith
-- ===== next =====
ring_nf
-- ===== next =====
ring_nf at h ⊢
linarith
-- ===== next =====
rw [div_eq_iff (by norm_num : (3 : ℝ) ≠ 0)] at h
linarith
-- ===== next =====
rw [eq_div_iff (by positivity)]
ring
-- ===== next =====
nlinarith [h₀, h₁, sq_nonneg (x - 1)]
-- ===== next =====
linear_combination h₀ - 2 * h₁
-- ===== next =====
linear_combination (exp := 2) h₀
-- ===== next =====
linear_combination 3 * h
-- ===== next =====
have h : x = 2 := by linarith
rw [h]; norm_num
-- ===== next =====
rw [h₀]
ring
-- ===== next =====
rw [mul_comm] at h
exact h
-- ===== next =====
rw [Real.rpow_natCast]
norm_num
-- ===== next =====
rw [Real.log_mul (by norm_num) (by norm_num)]
-- ===== next =====
rw [← Real.exp_log hx]
-- ===== next =====
apply div_pos <;> positivity
-- ===== next =====
apply mul_pos
· linarith
· linarith
-- ===== next =====
exact abs_sub_abs_le_abs_sub a b
-- ===== next =====
exact ⟨by linarith, by linarith⟩
-- ===== next =====
exact fun x => by ring
-- ===== next =====
intro x
ring
-- ===== next =====
funext x
simp [h₀]
ring
-- ===== next =====
push_cast
ring
-- ===== next =====
norm_cast at h ⊢
-- ===== next =====
exact_mod_cast h
-- ===== next =====
zify at h ⊢
linarith
-- ===== next =====
qify at h
linarith
-- ===== next =====
gcongr
-- ===== next =====
gcongr ?_ + 1
nlinarith
-- ===== next =====
apply pow_le_pow_left (by norm_num)
linarith
-- ===== next =====
rw [sq_eq_sq' (by linarith) (by linarith)]
-- ===== next =====
have key : (x - 1) * (x - 2) = 0 := by nlinarith
rcases mul_eq_zero.mp key with h | h
· left; linarith
· right; linarith
-- ===== next =====
nlinarith [sq_nonneg (x + 1), sq_nonneg (x - 1)] -- note: "x^2 ≥ 0" does the work
