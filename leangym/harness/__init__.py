"""The benchmark harness: run a prover over a theorem set, record, report and re-check its proofs.

    leangym-benchmark --agent hammer --dataset minif2f --split test --out hammer.jsonl

Parts, one module each: ``benchmark`` (the command line), ``run`` (workers, one leased Lean
process each, budgets, the final sound check), ``records`` (the resumable results file),
``stats`` / ``report`` (pass@k, confidence intervals, plots), ``recheck`` (proofs checked again
without the agent), ``server`` (the LeanTree server a command talks to, or a simulated one).
The prover interface is :mod:`leangym.prover`; agents are loaded by name (``module:Name`` or
``path/to/mod.py:Name``), so the harness imports no agent code of this repository.
"""
