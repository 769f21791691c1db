nlinarith [sq_nonneg (a - b), sq_nonneg (a + b), sq_nonneg (a - 1), sq_nonneg (b - 1)]
-- ===== next =====
nlinarith [sq_nonneg (x - y), sq_nonneg (x + y), mul_pos hx hy] -- "AM-GM", for example
-- ===== next =====
nlinarith [sq_nonneg (a - b), sq_nonneg (b - c), sq_nonneg (c - a), mul_pos ha hb, mul_pos hb hc, mul_pos hc ha]
-- ===== next =====
have h1 : 0 ≤ (a - b) ^ 2 := sq_nonneg (a - b)
have h2 : 0 ≤ (a + b) ^ 2 := sq_nonneg (a + b)
nlinarith [h1, h2]
-- ===== next =====
-- By the AM-GM inequality, x + 1/x ≥ 2; we use (x - 1)^2 ≥ 0.
have hx' : 0 < x := hx
field_simp
rw [ge_iff_le, div_le_iff hx']
nlinarith [sq_nonneg (x - 1)]
-- ===== next =====
nlinarith [sq_nonneg (x + y - 2), sq_nonneg (x - y), h₀, h₁]
-- ===== next =====
nlinarith [sq_abs (a - b), abs_nonneg (a - b), sq_nonneg (a + b - 1)]
-- ===== next =====
nlinarith [mul_self_nonneg (x - 3), mul_self_nonneg (y + 2), h]
-- ===== next =====
nlinarith [sq_nonneg (a * b - 1), sq_nonneg (a - b), mul_nonneg ha.le hb.le]
-- ===== next =====
set_option maxHeartbeats 400000 in
nlinarith [sq_nonneg (a - b), sq_nonneg (b - c), sq_nonneg (c - a)]
-- ===== next =====
set_option maxHeartbeats 2000000 in nlinarith [sq_nonneg (x - 1), sq_nonneg (x + 1), sq_nonneg (x ^ 2 - 1)]
-- ===== next =====
nlinarith [pow_pos hx 2, pow_pos hy 2, sq_nonneg (x - y), sq_nonneg (x ^ 2 - y ^ 2)]
-- ===== next =====
nlinarith [sq_nonneg (x - 2), sq_nonneg (x + 2), abs_nonneg x, h₀]
-- ===== next =====
-- the key identity: (a+b+c)^2 ≥ 3(ab+bc+ca)
nlinarith [sq_nonneg (a - b), sq_nonneg (b - c), sq_nonneg (a - c)]
-- ===== next =====
nlinarith [Real.sq_sqrt (show (0 : ℝ) ≤ 2 by norm_num), Real.sqrt_nonneg 2]
-- ===== next =====
nlinarith [Real.sin_sq_add_cos_sq x, sq_nonneg (Real.sin x - Real.cos x)]
-- ===== next =====
have h := sq_nonneg (a - 2 * b)
nlinarith [h, sq_nonneg (a + 2 * b)]
-- ===== next =====
nlinarith [mul_pos (sub_pos.mpr h₁) (sub_pos.mpr h₂), h₀]
-- ===== next =====
positivity
-- ===== next =====
apply le_of_sub_nonneg
nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)]
-- ===== next =====
nlinarith [sq_nonneg (a - b), sq_nonneg (a + b), sq_nonneg (a - 1), sq_nonneg (b - 1), mul_pos ha hb, mul_pos (mul_pos ha hb) ha]
-- ===== next =====
nlinarith [sq_nonneg (x * y - 1), sq_nonneg (x - y), sq_nonneg (x + y), hx, hy, hxy]
-- ===== next =====
linarith [sq_nonneg (a - b)]
-- ===== next =====
have key : (a - b) ^ 2 + (b - c) ^ 2 + (c - a) ^ 2 ≥ 0 := by positivity
linarith [key]
-- ===== next =====
nlinarith [sq_nonneg (a + b + c), sq_nonneg (a - b), sq_nonneg (b - c), sq_nonneg (c - a), ha, hb, hc, habc]
