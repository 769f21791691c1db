"""Shared pytest fixtures.

``no_shared_copy`` - the named "minif2f" dataset with no copy anywhere (see its docstring).

``sim_server`` - start simulated LeanTree servers (``leangym.sim.server``) for a test::

    def test_something(sim_server):
        srv = sim_server()                                   # defaults: single-branch, 8 processes
        srv2 = sim_server(factorized=True, max_processes=2)  # any SimServerConfig field as keyword
        client = LeanTreeClient(srv.url)                     # srv.url == "http://127.0.0.1:<free port>"
        ...
        srv.restart()   # fresh server (new pool, leases forgotten) on the same port
        srv.stop()      # stop early (idempotent); every server is stopped at teardown anyway

The factory returns a :class:`leangym.sim.server.SimServerHandle` (``.url``, ``.port``,
``.stop()``, ``.restart()``, ``.crashed``, ``.server.request_count`` ...). Servers bind
127.0.0.1 on a free port and run in daemon threads of the test process. By default the
pool holds real ``leangym.sim.process.SimProcess`` objects; pass
``process_factory=lambda factorized: ...`` to use something else (e.g. :class:`ScriptedProcess`).

``ScriptedProcess`` - a tiny, fully predictable stand-in for ``SimProcess`` (same API) for
protocol-level tests that must not depend on the simulator's tactic semantics:

* ``proof_from_sorry``: any text containing ``sorry`` -> root state 0 with one goal
  ``⊢ p ∧ q`` (hypotheses ``p q : Prop``, ``hp : p``, ``hq : q``); otherwise
  ``{"error": "No sorries found in theorem"}``.
* tactics: ``split`` -> two goals (``p``, ``q``; two branches when factorized),
  ``intro h`` -> one goal, ``done``/``exact ⟨hp, hq⟩``/``assumption`` -> closed,
  ``slow`` -> ``Tactic application timed out.``, anything else ->
  ``REPL returned error messages: [... unknown tactic ...]``.
  Unknown proof state ids raise ``KeyError`` (as ``SimProcess`` does).
* commands: text containing ``sorry`` -> one sorry (the goal above) and a warning; exactly
  ``#check bad`` (:data:`SCRIPTED_ERROR_COMMAND`, surrounding whitespace ignored) -> the error
  ``unknown identifier 'bad'``; anything else -> no messages. Only that exact command errs:
  the final check's random theorem name (``t_leangym_<hex>``) may contain the letters "bad".
"""
from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from leangym.datasets import minif2f as minif2f_mod
from leangym.sim.server import SimServerConfig, SimServerHandle, start_server

# Property tests are the same on every run and write nothing into the repository: examples come
# from a fixed seed (derandomize) and no example database is kept. The profile is loaded before
# the test modules are imported, so their @settings(...) inherit it (pytest
# --hypothesis-profile=NAME still picks another registered profile). Hypothesis also caches the
# constants it finds in source files under its storage directory (default: ./.hypothesis, i.e.
# the repository), whatever the database: that goes to a temporary directory, unless
# HYPOTHESIS_STORAGE_DIRECTORY says where.
try:
    from hypothesis import settings as _hypothesis_settings
    from hypothesis.configuration import set_hypothesis_home_dir as _set_hypothesis_home_dir
except ImportError:  # hypothesis is a dev extra; the tests that need it import it themselves
    pass
else:
    _hypothesis_settings.register_profile("leangym", derandomize=True, database=None)
    _hypothesis_settings.load_profile("leangym")
    if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        _hypothesis_home = tempfile.mkdtemp(prefix="leangym-hypothesis-")
        atexit.register(shutil.rmtree, _hypothesis_home, ignore_errors=True)
        _set_hypothesis_home_dir(_hypothesis_home)

# A suite started in the background by a script or under nohup inherits SIGINT/SIGHUP as ignored, and so
# would every process it spawns: the Ctrl-C and hang-up tests need them delivered. A handler (unlike an
# ignored signal) is reset to the default across exec. SIGINT gets Python's own (tests interrupt this
# process too); SIGHUP one that does nothing, so nohup still holds here and spawned processes get the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda *_: None)

# tqdm starts a "tqdm_monitor" thread with its first progress bar, which outlives every test.
# It only watches for stuck bars, which tests do not need.
try:
    import tqdm as _tqdm
except ImportError:
    pass
else:
    _tqdm.tqdm.monitor_interval = 0


def _goal(target: str, tag: str | None = None) -> dict[str, Any]:
    g: dict[str, Any] = {
        "type": target,
        "hypotheses": [
            {"user_name": "p", "type": "Prop"},
            {"user_name": "q", "type": "Prop"},
            {"user_name": "hp", "type": "p"},
            {"user_name": "hq", "type": "q"},
        ],
    }
    if tag:
        g["tag"] = tag
    return g


# The one command a ScriptedProcess answers with a Lean error. It is matched exactly (after
# stripping whitespace), never as a substring: a final check declares `t_leangym_<16 hex digits>`,
# and hex digits spell "bad" in about 0.35 % of names, which once failed a reward assertion.
SCRIPTED_ERROR_COMMAND = "#check bad"


class ScriptedProcess:
    """Predictable fake of ``leangym.sim.process.SimProcess`` (see the module docstring)."""

    def __init__(self, factorized: bool = False) -> None:
        self.factorized = factorized
        self.resets = 0
        self._lock = threading.Lock()
        self.reset()
        self.resets = 0

    def reset(self) -> None:
        with self._lock:
            self._ids = itertools.count(1)
            self._states: dict[int, list[dict[str, Any]]] = {}
            self.resets += 1

    def _new(self, goals: list[dict[str, Any]]) -> dict[str, Any]:
        psid = next(self._ids)
        self._states[psid] = goals
        return {"proof_state_id": psid, "goals": goals}

    def command(self, source: str) -> dict[str, Any]:
        if "sorry" in source:
            return {"env": 1, "messages": [{"severity": "warning", "pos": {"line": 1, "column": 8},
                                            "data": "declaration uses 'sorry'"}],
                    "sorries": [{"proofState": 0, "goal": "⊢ p ∧ q"}]}
        if source.strip() == SCRIPTED_ERROR_COMMAND:
            return {"env": 1, "messages": [{"severity": "error", "pos": {"line": 1, "column": 2},
                                            "data": "unknown identifier 'bad'"}]}
        return {"env": 1}

    def proof_from_sorry(self, theorem: str) -> dict[str, Any]:
        if "sorry" not in theorem:
            return {"error": "No sorries found in theorem"}
        with self._lock:
            self._states[0] = [_goal("p ∧ q")]
        return {"value": {"proof_state_id": 0, "goals": [_goal("p ∧ q")]}}

    def try_apply_tactic(self, proof_state_id: int, tactic: str, timeout_ms: int = 1000) -> dict[str, Any]:
        with self._lock:
            if proof_state_id not in self._states:
                raise KeyError(proof_state_id)
            t = tactic.strip()
            if t == "split":
                goals = [_goal("p", "left"), _goal("q", "right")]
                if self.factorized:
                    return {"value": [self._new([g]) for g in goals]}
                return {"value": [self._new(goals)]}
            if t == "intro h":
                return {"value": [self._new([_goal("p ∧ q")])]}
            if t in ("done", "exact ⟨hp, hq⟩", "assumption"):
                return {"value": []} if self.factorized else {"value": [self._new([])]}
            if t == "slow":
                return {"error": "Tactic application timed out."}
            return {"error": "REPL returned error messages: "
                             f'[{{"severity": "error", "data": "unknown tactic {t}"}}]'}


def scripted(factorized: bool) -> ScriptedProcess:
    return ScriptedProcess(factorized)


@pytest.fixture
def sim_server() -> Iterator[Callable[..., SimServerHandle]]:
    """Factory fixture: ``sim_server(**SimServerConfig fields) -> SimServerHandle`` (stopped at teardown)."""
    handles: list[SimServerHandle] = []

    def factory(**options: Any) -> SimServerHandle:
        options.setdefault("host", "127.0.0.1")
        options.setdefault("port", 0)
        handle = start_server(SimServerConfig(**options))
        handles.append(handle)
        return handle

    yield factory
    for h in handles:
        h.stop()


@pytest.fixture
def scripted_srv(sim_server) -> SimServerHandle:
    """A simulated server of two scripted processes (the LeanTree client tests)."""
    return sim_server(process_factory=scripted, max_processes=2)


@pytest.fixture
def scripted_client(scripted_srv):
    from leangym.backends.leantree import LeanTreeClient

    c = LeanTreeClient(scripted_srv.url, read_timeout=10)
    yield c
    c.close()


def used_processes(client) -> int:
    return client.status()["used_processes"]


# the named "minif2f" set, without ../shared (test_datasets*.py)
@pytest.fixture
def no_shared_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No LEANGYM_MINIF2F, no shared copy beside the repository, an empty cache: returns the fake repo
    root (its ``../shared`` does not exist until a test writes it)."""
    monkeypatch.delenv("LEANGYM_MINIF2F", raising=False)
    root = tmp_path / "checkout" / "main"
    root.mkdir(parents=True)
    monkeypatch.setattr(minif2f_mod, "repo_root", lambda: root)
    monkeypatch.setenv("LEANGYM_CACHE", str(tmp_path / "cache"))
    # anything that would still go to the network fails loudly
    monkeypatch.setattr(minif2f_mod, "DEFAULT_URL", "http://127.0.0.1:9/nowhere/minif2f.jsonl")
    assert minif2f_mod.local_copy() is None
    return root
