"""Proof terms: elaboration of ``exact``/``refine``/``have``/``apply`` arguments.

A term is checked against (or its type inferred as) a formula, Lean style:
hypotheses, lemma constants with implicit ``Prop`` arguments (``Or.inl``,
``absurd``, ...) solved by unification, application, projections ``.1 .2
.mp .mpr``, generalized field notation (``h.elim``, ``h.resolve_left``),
anonymous constructors, ``fun`` with optional ``⟨a, b⟩`` binders, ``?_``
holes (new goals, for ``refine``) and nested ``by`` blocks.

Like Lean's elaborator, arguments that need their expected type (``fun``,
``⟨..⟩``, holes, ``by``, ``rfl``) are postponed until the other arguments
have fixed the implicit ``Prop``\\ s, and the expected type of the whole
application is unified first. Soundness only rests on :func:`defeq` and on
each constant's schema (:mod:`leangym.sim.lemmas`) being a theorem of Lean's core library or Mathlib.
"""
from __future__ import annotations

from leangym.sim.formula import DEFEQ_LIMIT, NAT, PROP, defeq, defeq_beyond_sim, show, terms_defeq, unfold_arrow
from leangym.sim.goals import ElabError, Hyp, elab_nat, elab_prop, lookup
from leangym.sim.unify import has_mvar, instantiate, unify
from leangym.sim.tokens import squash, unknown_identifier

# `h.field` on a hypothesis whose type has this head looks for `Namespace.field`.
NAMESPACE = {"and": "And", "or": "Or", "iff": "Iff", "false": "False", "not": "Not", "true": "True"}
_POSTPONED = {"fun", "anon", "hole", "shole", "by", "show", "dotid"}


def _freshen(f, base: int):
    k = f[0]
    if k == "mvar":
        return ("mvar", base + f[1])
    if k in ("var", "true", "false", "num", "nvar"):
        return f
    if k == "rel":
        return f if not has_mvar(f) else ("rel", f[1], _freshen(f[2], base), _freshen(f[3], base))
    if k == "op":
        return ("op", f[1], _freshen(f[2], base), _freshen(f[3], base))
    return (k,) + tuple(_freshen(x, base) for x in f[1:])


class Elaborator:
    """Elaborates the terms of one tactic step; collects axioms and ``?_`` goals.

    ``run_by(seq, hyps, target)``: callback running a nested ``by`` block to
    completion (it returns the axioms used); given by the tactic engine.
    """

    def __init__(self, env: dict, src: str, run_by=None, tick=None, holes: bool = False, mvars: bool = False):
        self.env = env
        self.lines = src.split("\n")
        self.run_by = run_by
        self.tick = tick or (lambda: None)
        self.holes = holes  # `?_` allowed (refine)
        self.mvars = mvars  # unassigned implicit arguments allowed (apply)
        self.subst: dict = {}
        self.axioms: list[str] = []
        self.new_goals: list = []  # (position, hyps, target, tag)
        self._mvars_used = 0  # per elaborator: no shared counter between threads

    # ----------------------------------------------------------------- helpers
    def text(self, node) -> str:
        l1, c1, l2, c2 = node[1]
        if l1 == l2:
            return self.lines[l1 - 1][c1:c2]
        return squash("\n".join([self.lines[l1 - 1][c1:], *self.lines[l1:l2 - 1], self.lines[l2 - 1][:c2]]))

    def inst(self, f):
        return instantiate(f, self.subst) if self.subst else f

    def show(self, f) -> str:
        return show(self.inst(f))

    def use(self, axioms):
        for a in axioms:
            if a not in self.axioms:
                self.axioms.append(a)

    def mismatch(self, node, has, expected):
        return ElabError(f"type mismatch\n  {self.text(node)}\nhas type\n  {self.show(has)} : Prop\n"
                         f"but is expected to have type\n  {self.show(expected)} : Prop", node[1])

    def fits(self, expected, actual) -> bool:
        e, a = self.inst(expected), self.inst(actual)
        if has_mvar(e) or has_mvar(a):
            return unify(e, a, self.subst)
        return defeq(e, a)

    # ----------------------------------------------------------------- checking
    def check(self, node, expected, hyps) -> None:
        """Elaborate ``node`` against ``expected`` (may contain mvars) in context ``hyps``."""
        self.tick()
        k = node[0]
        if k == "paren":
            return self.check(node[2], expected, hyps)
        exp = self.inst(expected)
        if k in _POSTPONED and exp[0] == "mvar" and k != "hole":
            raise ElabError("(sim) the expected type of this term must be known", node[1])
        if k == "anon":
            return self._anon(node, exp, hyps)
        if k == "fun":
            return self._fun(node, exp, hyps)
        if k == "shole":
            if not self.holes:
                raise ElabError(f"don't know how to synthesize placeholder\ncontext:\n⊢ {show(exp)}", node[1])
            if has_mvar(exp):
                raise ElabError("(sim) the type of this placeholder is not known", node[1])
            tag = None if node[2] == "_" else node[2]
            self.new_goals.append(((node[1][0], node[1][1]), hyps, exp, tag))
            return None
        if k == "hole":
            raise ElabError(f"don't know how to synthesize placeholder\ncontext:\n⊢ {show(exp)}", node[1])
        if k == "by":
            if has_mvar(exp):
                raise ElabError("(sim) the expected type of this 'by' block must be known", node[1])
            self.use(self.run_by(node[2], hyps, exp))
            return None
        if k == "show":
            ty = elab_prop(node[2], hyps)
            if not self.fits(exp, ty):
                raise self.mismatch(node, ty, exp)
            return self.check(node[3], ty, hyps)
        if k == "id" and node[2] in ("sorry", "rfl") and lookup(hyps, node[2]) is None:
            if node[2] == "sorry":
                self.use(("sorryAx",))
                return None
            return self._rfl(node, exp)
        if k == "app" and node[2][0] == "id" and node[2][2] in ("Eq.refl", "rfl") and lookup(hyps, node[2][2]) is None:
            return self._eq_refl(node, exp, hyps)
        if k == "app":
            return self._app(node, exp, hyps)
        if k == "dotid":  # `.inl hp`: the namespace comes from the expected type
            return self._app(("app", node[1], node, ()), exp, hyps)
        if k == "id" and lookup(hyps, node[2]) is None and node[2] in self.env:
            return self._app(("app", node[1], node, ()), exp, hyps)
        if k == "id" and (h := lookup(hyps, node[2])) is not None and h.type in (PROP, NAT):
            sort = "Prop" if h.type == PROP else "ℕ"
            raise ElabError(f"type mismatch\n  {node[2]}\nhas type\n  {sort} : Type\nbut is expected to have type\n"
                            f"  {self.show(exp)} : Prop", node[1])
        ty = self._proj(node, hyps, exp) if k == "proj" else self.infer(node, hyps)
        if not self.fits(exp, ty):
            raise self.mismatch(node, ty, exp)
        return None

    def _rfl(self, node, exp):
        if exp[0] == "rel" and exp[1] == "=":
            try:
                if terms_defeq(exp[2], exp[3]):
                    return None
            except Exception:
                pass
            _unfolds_further(exp, node)
            lhs = show(("rel", "=", exp[2], exp[2]))
            raise ElabError(f"type mismatch\n  rfl\nhas type\n  {lhs} : Prop\nbut is expected to have type\n"
                            f"  {show(exp)} : Prop", node[1])
        raise ElabError(f"type mismatch\n  rfl\nhas type\n  ?a = ?a : Prop\nbut is expected to have type\n"
                        f"  {show(exp)} : Prop", node[1])

    def _eq_refl(self, node, exp, hyps):
        """``Eq.refl a : a = a`` (and ``@rfl _ a``): both sides must compute to ``a``."""
        args = node[3]
        if node[2][2] == "Eq.refl" and len(args) != 1 or node[2][2] == "rfl" and len(args) > 2:
            raise ElabError("(sim) unsupported use of Eq.refl", node[1])
        a = args[-1]
        if exp[0] != "rel" or exp[1] != "=":
            raise ElabError(f"type mismatch\n  {self.text(node)}\nhas type\n  ?a = ?a : Prop\n"
                            f"but is expected to have type\n  {show(exp)} : Prop", node[1])
        if a[0] != "hole":
            v = elab_nat(a, hyps)
            if terms_defeq(exp[2], v) and terms_defeq(v, exp[3]):
                return None
        elif terms_defeq(exp[2], exp[3]):
            return None
        _unfolds_further(exp, node)
        raise ElabError(f"type mismatch\n  {self.text(node)}\nhas type\n  {self.text(a)} = {self.text(a)} : Prop\n"
                        f"but is expected to have type\n  {show(exp)} : Prop", node[1])

    def _anon(self, node, exp, hyps):
        items = node[2]
        head = exp[0]
        if head == "true" and not items:
            return None
        if head == "rel" and exp[1] == "∣":  # Lean unfolds `k ∣ e` to `∃ c, e = k * c`: not modelled
            raise ElabError("(sim) witnesses for divisibility (⟨c, h⟩) are outside the simulated fragment", node[1])
        if head not in ("and", "iff"):
            raise ElabError(f"invalid constructor ⟨...⟩, expected type must be an inductive type \n  {show(exp)}", node[1])
        if len(items) < 2:
            raise ElabError(f"invalid constructor ⟨...⟩, insufficient number of arguments, constructs "
                            f"'{'And.intro' if head == 'and' else 'Iff.intro'}' has #2 explicit fields, "
                            f"but only #{len(items)} provided", node[1])
        first = items[0]
        rest = items[1] if len(items) == 2 else ("anon", (items[1][1][0], items[1][1][1], node[1][2], node[1][3]), items[1:])
        if head == "and":
            self.check(first, exp[1], hyps)
            self.check(rest, exp[2], hyps)
        else:
            self.check(first, ("imp", exp[1], exp[2]), hyps)
            self.check(rest, ("imp", exp[2], exp[1]), hyps)
        return None

    def _fun(self, node, exp, hyps):
        binders, body = node[2], node[3]
        cur = exp
        for b in binders:
            arrow = unfold_arrow(self.inst(cur))
            if arrow is None:
                raise ElabError(f"type mismatch\n  {self.text(node)}\nhas a function type, but is expected to have "
                                f"type\n  {self.show(cur)} : Prop", node[1])
            dom, cod = arrow
            if has_mvar(dom):
                raise ElabError("(sim) the binder type of this 'fun' must be known", b[1])
            if b[0] == "bname":
                if b[3] is not None:
                    ann = elab_prop(b[3], hyps)
                    if not defeq(ann, dom):
                        raise ElabError(f"type mismatch\n  {b[2]}\nhas type\n  {show(ann)} : Prop\n"
                                        f"but is expected to have type\n  {show(dom)} : Prop", b[1])
                name = b[2]
                hyps = hyps + ((Hyp("x", dom, True),) if name == "_" else (Hyp(name, dom),))
            else:
                hyps = hyps + tuple(self._destructure(b[2], dom))
            cur = cod
        return self.check(body, cur, hyps)

    def _destructure(self, pat, ty):
        """Hypotheses bound by an anonymous-constructor binder ``⟨a, b⟩`` of type ``ty``."""
        if pat[0] == "hole":
            return [Hyp("x", ty, True)]
        if pat[0] == "id":
            return [Hyp("x", ty, True)] if pat[2] == "_" else [Hyp(pat[2], ty)]
        if pat[0] == "paren":
            return self._destructure(pat[2], ty)
        if pat[0] != "anon" or ty[0] not in ("and", "iff") or len(pat[2]) < 2:
            raise ElabError(f"(sim) unsupported pattern for type\n  {show(ty)}", pat[1])
        items = pat[2]
        if ty[0] == "and":
            left, right = ty[1], ty[2]
        else:
            left, right = ("imp", ty[1], ty[2]), ("imp", ty[2], ty[1])
        rest = items[1] if len(items) == 2 else ("anon", pat[1], items[1:])
        return self._destructure(items[0], left) + self._destructure(rest, right)

    # ----------------------------------------------------------------- inference
    def infer(self, node, hyps):
        self.tick()
        k = node[0]
        if k == "paren":
            return self.infer(node[2], hyps)
        if k == "asc":
            ty = elab_prop(node[3], hyps)
            self.check(node[2], ty, hyps)
            return ty
        if k == "id":
            name = node[2]
            h = lookup(hyps, name)
            if h is not None:
                if h.type == PROP:
                    raise ElabError(f"(sim) '{name}' is a proposition, not a proof of one", node[1])
                if h.type == NAT:
                    raise ElabError(f"(sim) '{name}' is a natural number, not a proof", node[1])
                return h.type
            return self._app(("app", node[1], node, ()), None, hyps)
        if k == "app":
            return self._app(node, None, hyps)
        if k == "proj":
            return self._proj(node, hyps)
        if k in _POSTPONED:
            what = {"anon": "invalid constructor ⟨...⟩, expected type must be known"}.get(k, "(sim) the expected type of this term must be known")
            raise ElabError(what, node[1])
        if k in ("bin", "not", "num"):
            raise ElabError(f"(sim) '{self.text(node)}' is a proposition or a number, not a proof", node[1])
        raise ElabError("(sim) this term is outside the simulated fragment", node[1])

    def _proj(self, node, hyps, expected=None):
        base, field = node[2], node[3]
        ty = self.inst(self.infer(base, hyps))
        head = ty[0]
        if head == "and" and field in ("1", "left"):
            return ty[1]
        if head == "and" and field in ("2", "right"):
            return ty[2]
        if head == "iff" and field in ("1", "mp"):
            return ("imp", ty[1], ty[2])
        if head == "iff" and field in ("2", "mpr"):
            return ("imp", ty[2], ty[1])
        return self._app(("app", node[1], node, ()), expected, hyps)

    # ----------------------------------------------------------------- application
    def _function(self, head, hyps, expected=None):
        """(Const, base argument or None) for a head that names a constant, else None."""
        if head[0] == "id":
            name = head[2]
            if lookup(hyps, name) is not None:
                return None  # a local hypothesis used as a function
            c = self.env.get(name)
            if c is not None:
                return c, None
            parts = name.split(".")
            if len(parts) > 1 and lookup(hyps, parts[0]) is not None:
                node = ("id", head[1], parts[0])  # `h.mp` is `h` then field `mp`
                for p in parts[1:]:
                    node = ("proj", head[1], node, p)
                return ("redo", node)
            raise ElabError(unknown_identifier(name), head[1])
        if head[0] == "dotid":
            exp = self.inst(expected) if expected is not None else None
            ns = NAMESPACE.get(exp[0]) if exp is not None else None
            c = self.env.get(f"{ns}.{head[2]}") if ns else None
            if c is None:
                raise ElabError(f"invalid dotted identifier notation, unknown identifier `{ns or '?'}.{head[2]}` "
                                f"from expected type\n  {show(exp) if exp is not None else '?'}", head[1])
            return c, None
        if head[0] == "proj":
            base, field = head[2], head[3]
            ty = self.inst(self.infer(base, hyps))
            ns = NAMESPACE.get(ty[0])
            structural = (ty[0] == "and" and field in ("1", "2", "left", "right")) or \
                         (ty[0] == "iff" and field in ("1", "2", "mp", "mpr"))
            if structural:
                return None
            c = self.env.get(f"{ns}.{field}") if ns else None
            if c is None:
                if ns is None:
                    raise ElabError(f"invalid field notation, type is not of the form (C ...) where C is a constant\n"
                                    f"  {self.text(base)}\nhas type\n  {show(ty)}", head[1])
                raise ElabError(f"invalid field '{field}', the environment does not contain '{ns}.{field}'\n"
                                f"  {self.text(base)}\nhas type\n  {show(ty)}", head[1])
            return c, base
        return None

    def _app(self, node, expected, hyps):
        head, args = node[2], list(node[3])
        fn = self._function(head, hyps, expected)
        if fn is not None and fn[0] == "redo":
            return self._app(("app", node[1], fn[1], node[3]), expected, hyps) if args or expected is not None \
                else self.infer(fn[1], hyps)
        if fn is None:
            # a local hypothesis (or projection) used as a function
            ty = self.infer(head, hyps)
            for a in args:
                arrow = unfold_arrow(self.inst(ty))
                if arrow is None:
                    raise ElabError(f"function expected\n  {self.text(head)}\nterm has type\n  {self.show(ty)}", node[1])
                self._arg(node, a, arrow[0], hyps, postpone=False)
                ty = arrow[1]
            if expected is not None and not self.fits(expected, ty):
                raise self.mismatch(node, ty, expected)
            return ty
        const, base = fn
        self.use(const.axioms)
        mbase = self._mvars_used  # fresh metavariable ids for this instance of the constant
        self._mvars_used += len(const.binders) + 3
        pending = list(args)
        if base is not None:
            pending.insert(0, ("__base__", base))
        jobs = []  # (pattern, arg)
        remaining = []
        for b in const.binders:
            if b[0] in ("P", "N"):
                if b[2]:
                    if not pending or (b[0] == "N" and pending[0][0] == "__base__"):
                        if b[0] == "N" and self.mvars:
                            continue  # `apply Nat.le_refl`: the goal determines the argument
                        what = "proposition" if b[0] == "P" else "ℕ"
                        raise ElabError(f"(sim) '{const.name}' needs its explicit {what} argument", node[1])
                    a = pending.pop(0)
                    if a[0] != "hole":
                        self.subst[mbase + b[3]] = elab_prop(a, hyps) if b[0] == "P" else elab_nat(a, hyps)
                continue
            pat = _freshen(b[2], mbase)
            if pending:
                a = pending.pop(0)
                jobs.append((pat, a[1] if a[0] == "__base__" else a))
            else:
                remaining.append(pat)
        result = _freshen(const.result, mbase)
        for pat in reversed(remaining):
            result = ("imp", pat, result)
        early = set()
        while pending:  # more arguments than binders: the result must be an implication
            a = pending.pop(0)
            if self.inst(result)[0] == "mvar":  # `id h x`: the arguments so far fix the result first
                for j, (pat, arg) in enumerate(jobs):
                    if j not in early and not self._postponed(arg):
                        self._arg(node, arg, pat, hyps, postpone=False)
                        early.add(j)
            arrow = unfold_arrow(self.inst(result))
            if arrow is None:
                raise ElabError(f"function expected\n  {self.text(node)}\nterm has type\n  {self.show(result)}", node[1])
            jobs.append((arrow[0], a))
            result = arrow[1]
        if expected is not None:
            unify(result, expected, self.subst)  # first-order unification with the expected type (may fail)
        later = []
        for j, (pat, a) in enumerate(jobs):
            if self._postponed(a):
                later.append((pat, a))
            elif j not in early:
                self._arg(node, a, pat, hyps, postpone=False)
        for pat, a in later:
            self._arg(node, a, pat, hyps, postpone=True)
        result = self.inst(result)
        if expected is not None and not self.fits(expected, result):
            raise self.mismatch(node, result, expected)
        return self.inst(result)

    def infer_closed(self, node, hyps):
        """The type of ``node`` with every implicit ``Prop`` argument determined (``have h := e``)."""
        ty = self.inst(self.infer(node, hyps))
        if has_mvar(ty):
            raise ElabError(f"don't know how to synthesize implicit argument\n  {self.text(node)}\n"
                            "(sim) some proposition arguments could not be determined", node[1])
        return ty

    @staticmethod
    def _postponed(a) -> bool:
        """Arguments Lean elaborates only once their expected type is known."""
        return a[0] in _POSTPONED or (a[0] == "id" and a[2] in ("rfl", "sorry")) or \
            (a[0] == "paren" and a[2][0] in _POSTPONED)

    def _arg(self, fnode, a, pat, hyps, postpone: bool):
        """Elaborate argument ``a`` of application ``fnode`` against binder type ``pat``."""
        pat = self.inst(pat)
        if postpone or not has_mvar(pat) or (a[0] == "id" and lookup(hyps, a[2]) is None) or a[0] == "dotid":
            try:
                self.check(a, pat, hyps)
            except ElabError as e:
                if e.msg.startswith("type mismatch") and e.span == a[1] and a[0] in ("id", "proj", "app", "paren"):
                    raise self._app_mismatch(fnode, a, pat, e) from None
                raise
            return
        ty = self.infer(a, hyps)
        if not self.fits(pat, ty):
            raise self._app_mismatch(fnode, a, pat, None, ty)

    def _app_mismatch(self, fnode, a, pat, err, ty=None):
        if ty is None and err is not None:  # recover the argument's type from the mismatch message
            ty_text = err.msg.split("\nhas type\n  ", 1)[1].split(" : Prop\n", 1)[0] if "\nhas type\n  " in err.msg else "?"
            has = ty_text
        else:
            has = self.show(ty) if ty is not None else "?"
        return ElabError(f"application type mismatch\n  {self.text(fnode)}\nargument\n  {self.text(a)}\nhas type\n"
                         f"  {has} : Prop\nbut is expected to have type\n  {self.show(pat)} : Prop", a[1])


def _unfolds_further(eq, node) -> None:
    """An equation the kernel's conservative defeq refuses where Lean may unfold further (``x + 0`` is
    ``x`` there): say it is the simulator's limit, not Lean's verdict."""
    if defeq_beyond_sim(eq[2], eq[3]):
        raise ElabError(DEFEQ_LIMIT, node[1])
