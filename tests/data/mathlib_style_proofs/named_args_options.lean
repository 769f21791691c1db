exact Finset.sum_le_sum (f := fun i => (i : ℝ)) h
-- ===== next =====
exact Nat.rec (motive := fun _ => True) trivial (fun _ _ => trivial) n
-- ===== next =====
exact Finset.prod_pos (fun i _ => by positivity)
-- ===== next =====
refine Nat.le_induction (P := fun n _ => 2 ^ n ≥ n + 1) ?_ ?_ n hn
· norm_num
· intro k hk ih
  rw [pow_succ]
  omega
-- ===== next =====
exact mul_pos (ha := ha) hb
-- ===== next =====
apply Finset.sum_congr rfl
intro x hx
ring
-- ===== next =====
rw [Finset.sum_comm' (s' := fun _ => Finset.range n)]
-- ===== next =====
exact @Nat.le_of_lt_succ _ _ h
-- ===== next =====
exact le_trans (b := 2) (by norm_num) h
-- ===== next =====
set_option maxRecDepth 10000 in
decide
-- ===== next =====
set_option maxHeartbeats 400000 in
norm_num [Finset.sum_range_succ]
-- ===== next =====
set_option maxHeartbeats 1000000 in
nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)]
-- ===== next =====
set_option maxHeartbeats 4000000 in
field_simp
ring_nf
-- ===== next =====
open Real in
nlinarith [sqrt_nonneg 2, sq_sqrt (show (0 : ℝ) ≤ 2 by norm_num)]
-- ===== next =====
open Finset in
simp [sum_range_succ]
-- ===== next =====
simp (config := { contextual := true })
-- ===== next =====
rw (config := { occs := .pos [1] }) [h₀]
-- ===== next =====
exact Finset.sum_le_sum (f := fun i => i) (g := fun i => i + 1) (fun i _ => by omega)
-- ===== next =====
have := Finset.card_le_card (s := Finset.range 3) (t := Finset.range 5) (by intro x; simp; omega)
simpa using this
-- ===== next =====
exact h.trans (c := 5) (by norm_num)
-- ===== next =====
nlinarith [mul_pos (sub_pos.mpr hab) (sub_pos.mpr hbc)]
-- ===== next =====
norm_num (config := { decide := true })
-- ===== next =====
omega
