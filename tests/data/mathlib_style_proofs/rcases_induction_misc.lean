rcases h₀ with ⟨h₁, h₂⟩
linarith
-- ===== next =====
rcases h with ⟨x, ⟨hx₁, hx₂⟩⟩
exact ⟨x, hx₂, hx₁⟩
-- ===== next =====
rcases h with (h | h) | h
· exact Or.inl h
· exact Or.inr (Or.inl h)
· exact Or.inr (Or.inr h)
-- ===== next =====
obtain ⟨n, rfl⟩ | ⟨n, rfl⟩ := Int.even_or_odd m
· ring_nf; omega
· ring_nf; omega
-- ===== next =====
rintro x ⟨hx₁, hx₂⟩
constructor <;> linarith
-- ===== next =====
rintro ⟨a, b⟩ h
simp at h
-- ===== next =====
intro h
rcases h with _ | _ | n
· simp
· simp
· omega
-- ===== next =====
induction n with
| zero => norm_num
| succ k ih =>
  rw [pow_succ]
  omega
-- ===== next =====
induction' n with n ih
· simp
· rw [Finset.sum_range_succ, ih]
  ring
-- ===== next =====
induction n using Nat.strong_induction_on with
| _ n ih =>
  rcases n with _ | n
  · simp
  · exact ih n (Nat.lt_succ_self n)
-- ===== next =====
refine Nat.rec ?_ ?_ n
· simp
· intro k hk
  simp [hk]
-- ===== next =====
by_contra h
push_neg at h
nlinarith
-- ===== next =====
by_contra! h
linarith
-- ===== next =====
contrapose! h
nlinarith
-- ===== next =====
exfalso
linarith
-- ===== next =====
absurd h₀
norm_num
-- ===== next =====
intro x hx
have := h₀ x hx
linarith
-- ===== next =====
specialize h 2
norm_num at h
exact h
-- ===== next =====
apply Nat.dvd_sub'
· exact dvd_pow_self 2 (by norm_num)
· exact dvd_refl 2
-- ===== next =====
exact Nat.Prime.two_le hp
-- ===== next =====
exact (Nat.prime_def_lt.mp hp).1
-- ===== next =====
apply Finset.sum_nonneg
intro i _
positivity
-- ===== next =====
rw [Finset.sum_range_succ, Finset.sum_range_succ, Finset.sum_range_one]
norm_num
-- ===== next =====
simp [Finset.filter, Finset.range]
rfl
-- ===== next =====
tauto
-- ===== next =====
aesop
-- ===== next =====
trivial
-- ===== next =====
exact h
-- ===== next =====
assumption
-- ===== next =====
subst h₀
rfl
-- ===== next =====
congr 1
ring
-- ===== next =====
apply congrArg
ring
-- ===== next =====
show (2 : ℝ) * 3 = 6
norm_num
-- ===== next =====
change 1 + 1 = 2
rfl
-- ===== next =====
suffices h : x = 3 by
  rw [h]
  norm_num
linarith
-- ===== next =====
wlog hab : a ≤ b with H
· exact (H b a (le_of_not_le hab)).symm
· linarith
-- ===== next =====
set y := x + 1 with hy
nlinarith
-- ===== next =====
let k := n + 1
have hk : k = n + 1 := rfl
omega
-- ===== next =====
nth_rewrite 2 [h₀]
ring
-- ===== next =====
calc _ ≤ _ := h₀
  _ ≤ _ := h₁
-- ===== next =====
filter_upwards [h] with x hx
linarith
