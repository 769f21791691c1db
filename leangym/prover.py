"""The agent interface of the benchmark harness: implement ``prove`` and you are benchmarkable.

A prover gets a theorem, a :class:`~leangym.session.ProofSession` already
started on it (``session.root`` is the first proof state) and the budget, and
returns a proof or ``None``::

    from leangym.backends.types import Outcome

    class MyProver:
        def prove(self, theorem, session, budget):
            for r in session.apply_many(session.root, ["norm_num", "simp", "omega"]):
                if r.outcome is Outcome.PROVED:
                    return [r.tactic]           # a list of tactics, a script, or a ProofTree
            return None

    python -m scripts.benchmark --agent mypkg.mod:MyProver ...   # --agent-kwargs '{...}' for __init__'s

The harness never trusts the answer: it re-checks it whole (in tactic mode, then one command with
``#print axioms``, on a process fresh from the pool, so nothing the prover ran
on its own process counts) and only then counts it.
The session enforces the budget (every Lean call: tactics, ``session.process``, and
``session.verify``, which costs two calls; the harness's own check is free): a call beyond it raises
:class:`~leangym.session.BudgetExhausted`, which the harness treats as "not
solved" (not as an error). Optional: a ``set_seed(seed: int)`` method is
called before every attempt with a seed derived from the run seed, the
theorem and the attempt number, so that results are reproducible.

A Gymnasium-style policy (``act(observation, info) -> tactic``) becomes a
prover with :class:`PolicyProver`; :func:`load_agent` does that by itself, for
an object with ``act`` and for a plain function whose first two parameters are
named ``(observation, info)`` (or ``obs``); any other function is a factory,
called with ``--agent-kwargs``, that must return a prover or a policy.
A ``path/to/file.py`` agent module is executed once per process, however many
workers load the agent.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Protocol, Sequence, Union, runtime_checkable

from leangym.proof import LinearWalk, ProofTree
from leangym.session import Budget, ProofSession
from leangym.theorem import Theorem

Proof = Union[ProofTree, str, Sequence[str]]  # a tree, a tactic script, or tactics applied in order


@runtime_checkable
class Prover(Protocol):
    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> Proof | None:
        """A proof of ``theorem`` found with ``session`` within ``budget``, or ``None``."""
        ...


@runtime_checkable
class Policy(Protocol):
    def act(self, observation: str, info: dict) -> str | None:
        """The next tactic for the first open goal (``None`` or ``""``: give up)."""
        ...


@dataclass
class PolicyProver:
    """Runs a policy ``act(observation, info) -> tactic`` (or a plain callable ``f(observation, info)``)
    as a linear episode.

    ``info`` holds ``step``, ``theorem`` (name), ``last_tactic``, ``last_outcome``,
    ``last_error``, ``open_branches`` and ``remaining_calls``. The episode ends when
    every goal is closed, after ``max_steps`` tactics, when the policy returns
    ``None``/``""``, or when the budget is spent.
    """

    policy: Any
    max_steps: int = 64

    def set_seed(self, seed: int) -> None:
        fn = getattr(self.policy, "set_seed", None) or getattr(self.policy, "seed", None)
        if callable(fn):
            fn(seed)

    def prove(self, theorem: Theorem, session: ProofSession, budget: Budget) -> Proof | None:
        act: Callable[[str, dict], str | None] = getattr(self.policy, "act", self.policy)
        walk = LinearWalk(session.root)
        info: dict[str, Any] = {"theorem": theorem.name, "last_tactic": None, "last_outcome": None,
                                "last_error": None}
        for step in range(self.max_steps):
            if walk.done:
                break
            info.update(step=step, open_branches=len(walk.states), remaining_calls=session.remaining_calls())
            tactic = act(walk.observation(), dict(info))
            if not tactic:
                return None
            result = session.step_walk(walk, tactic)
            info.update(last_tactic=tactic, last_outcome=result.outcome.value, last_error=result.error)
        return walk.tree()


# --------------------------------------------------------------------------- loading by name

class AgentSpecError(ValueError):
    """``--agent`` does not name something that can prove."""


def resolve(spec: str) -> Any:
    """``"pkg.mod:Name"`` (or ``"path/to/file.py:Name"``, or ``"pkg.mod.Name"``) -> the object."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
    else:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise AgentSpecError(f"--agent {spec!r}: expected 'package.module:Name' or 'file.py:Name'")
    try:
        module = _import(module_name)
    except ImportError as e:
        raise AgentSpecError(f"--agent {spec!r}: cannot import {module_name!r} ({e})") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentSpecError(f"--agent {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


# Agent files already executed, by resolved path: every worker loads the agent, and a module that
# loads a large model at import must not do so once per worker (importlib caches dotted modules itself).
_FILE_MODULES: dict[Path, ModuleType] = {}
_FILE_LOCK = threading.RLock()  # workers load at the same time; RLock: an agent file may load another


def _import(module_name: str) -> Any:
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser().resolve()
        with _FILE_LOCK:
            if path in _FILE_MODULES:
                return _FILE_MODULES[path]
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            if mod_spec is None or mod_spec.loader is None or not path.exists():
                raise ImportError(f"no Python file at {path}")
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules.setdefault(path.stem, module)
            mod_spec.loader.exec_module(module)
            _FILE_MODULES[path] = module  # only once it ran to the end: a failed import is retried
            return module
    return importlib.import_module(module_name)


def as_prover(obj: Any) -> Prover:
    """A prover as is; a policy (``act``, or a function of (observation, info)) wrapped in
    :class:`PolicyProver`; anything else is an error."""
    if callable(getattr(obj, "prove", None)):
        return obj
    if callable(getattr(obj, "act", None)) or is_policy_function(obj):
        return PolicyProver(obj)
    raise AgentSpecError(f"{type(obj).__name__} has neither prove(theorem, session, budget) nor "
                         "act(observation, info)")


POLICY_PARAMETERS = (("observation", "obs"), ("info",))


def is_policy_function(obj: Any) -> bool:
    """A plain function ``f(observation, info) -> tactic`` (by its parameter names), not a factory."""
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    params = [p for p in inspect.signature(obj).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(params) >= 2 and all(p.name in names for p, names in zip(params, POLICY_PARAMETERS))


def load_agent(spec: str | Any, kwargs: Mapping[str, Any] | None = None) -> Prover:
    """Build a prover from ``spec``: a class (called with ``kwargs``), a policy function
    ``f(observation, info)`` (see :func:`is_policy_function`; no ``kwargs``), any other function
    (a factory, called with ``kwargs``), or an instance (``kwargs`` must be empty). Strings are
    resolved by :func:`resolve`."""
    kwargs = dict(kwargs or {})
    obj = resolve(spec) if isinstance(spec, str) else spec
    if is_policy_function(obj):
        if kwargs:
            raise AgentSpecError(f"agent {spec!r} is a policy function (observation, info); it takes no kwargs "
                                 f"(got {sorted(kwargs)}): give a factory that returns a policy instead")
        return PolicyProver(obj)
    if inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "prove") and not hasattr(obj, "act")):
        try:
            obj = obj(**kwargs)
        except TypeError as e:
            hint = "" if inspect.isclass(obj) else (
                "; a function given as the agent is called as a factory (with --agent-kwargs) that returns a "
                "prover or a policy: name a policy function's parameters (observation, info), or wrap it "
                "in leangym.prover.PolicyProver")
            raise AgentSpecError(f"cannot build agent {spec!r} with kwargs {kwargs}: {e}{hint}") from e
    elif kwargs:
        raise AgentSpecError(f"agent {spec!r} is an instance; it takes no kwargs (got {sorted(kwargs)})")
    return as_prover(obj)
