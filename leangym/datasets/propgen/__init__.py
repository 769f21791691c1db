"""Internals of the PropLogic theorem generator; the public API is :mod:`leangym.datasets.proplogic`.

* :mod:`.formulas` - the generator's formula tuples, printed with Lean 4 precedences
* :mod:`.draw` - the random stream and random formulas (only ``random()`` is drawn)
* :mod:`.builder` - the random proof tree: leaves and inner tactic rules
* :mod:`.prover` - one-step closers and the short structural prover
* :mod:`.statement` - a finished tree as a named statement and its reference script

These formulas are not :mod:`leangym.sim.formula`'s (the kernel's): variables
are indices here, renamed to ``p q r …`` only when a statement is printed.
"""
