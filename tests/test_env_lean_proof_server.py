"""LeanProof-v0 when its server is missing, killed, restarted, failing or hung, and the leases it holds
(returned on close and when dropped, replaced when stale, recycled every n episodes)."""
from __future__ import annotations

import contextlib
import errno
import gc
import socket
import threading
import time
from typing import Iterator

import gymnasium as gym
import pytest

from leangym.backends.types import ServerError, ServerTimeout, ServerUnavailable
from leangym.envs.lean_proof import LeanProofEnv
from leangym.sim.local import LocalProcess

from conftest import ScriptedProcess
from test_env_lean_proof import AND, NO_AXIOM_CHECK, ONE, ONE_OBS, make, used


# ----------------------------------------------------------------------------- server trouble

@contextlib.contextmanager
def _reserved_port() -> Iterator[socket.socket]:
    """A loopback port held by a bound socket that does not listen: connecting to it is refused,
    and the kernel hands it to no one else meanwhile (as a free port, or an outgoing connection's).
    The sim server (SO_REUSEADDR) may still bind it on Linux, where only a *listening* socket
    blocks such a bind; see _start_on."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("127.0.0.1", 0))
        yield holder
    finally:
        holder.close()


def _start_on(sim_server, holder: socket.socket, **options):
    """Start a sim server on ``holder``'s port, then let the holder go."""
    port = holder.getsockname()[1]
    try:
        return sim_server(port=port, **options)
    except OSError as e:  # a platform that refuses to share a bound port: free it first
        if e.errno != errno.EADDRINUSE:
            raise
        holder.close()
        return sim_server(port=port, **options)
    finally:
        holder.close()


def test_no_server_at_reset_is_one_clear_error():
    with _reserved_port() as holder:
        port = holder.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        env = gym.make("LeanProof-v0", theorem=AND, server=url)
        with pytest.raises(ServerUnavailable) as err:
            env.reset()
    assert url in str(err.value) and f"python -m leangym.sim.server --port {port}`" in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    env.close()


def test_first_reset_before_the_server_starts_then_proving_works(sim_server):
    """The usual first run: reset() before the server is up (a clear error), start it, go on.
    (Gymnasium's passive env checker would break the first step after such a reset, so
    LeanProof-v0 is registered without it; check_env still runs in the tests.)"""
    with _reserved_port() as holder:
        env = gym.make("LeanProof-v0", theorem=ONE, server=f"http://127.0.0.1:{holder.getsockname()[1]}")
        with pytest.raises(ServerUnavailable):
            env.reset()
        srv = _start_on(sim_server, holder)
    assert env.reset(seed=0)[0] == ONE_OBS
    assert env.step("exact hq")[1] == 1.0
    env.close()
    assert used(srv) == 0


def test_default_server_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("LEANGYM_SERVER", "http://10.0.0.1:9999")
    assert LeanProofEnv(AND).server_url == "http://10.0.0.1:9999"
    monkeypatch.delenv("LEANGYM_SERVER")
    assert LeanProofEnv(AND).server_url == "http://127.0.0.1:8000"


@pytest.mark.parametrize("gen", [1, 2, 3])
def test_server_killed_mid_episode_then_restarted(sim_server, gen):
    srv = sim_server(generation=gen)
    env = make(srv, theorem=ONE)
    env.reset(seed=0)
    srv.stop()
    obs, reward, terminated, truncated, info = env.step("exact hq")  # must not raise
    assert truncated and not terminated and reward == 0.0
    assert info["outcome"] == "server_failure" and info["error"]
    with pytest.raises(ServerUnavailable):
        env.reset()
    srv.restart()
    obs, info = env.reset(seed=1)  # re-leased
    assert obs == ONE_OBS
    assert env.step("exact hq")[1] == 1.0
    env.close()
    assert used(srv) == 0


@pytest.mark.parametrize("gen", [1, 2, 3])
def test_stale_lease_after_a_silent_restart_is_replaced(sim_server, gen):
    srv = sim_server(generation=gen)
    env = make(srv, theorem=ONE)
    env.reset(seed=0)
    srv.restart()  # the kept lease id is unknown to the new server
    obs, _ = env.reset(seed=0)
    assert obs == ONE_OBS and used(srv) == 1
    env.close()
    assert used(srv) == 0


class FailingStart(ScriptedProcess):
    """``proof_from_sorry`` fails (an HTTP 500 from the server) the first ``failures`` times, pool-wide."""

    failures = 0

    def proof_from_sorry(self, theorem):
        if FailingStart.failures > 0:
            FailingStart.failures -= 1
            raise RuntimeError("REPL process died")
        return super().proof_from_sorry(theorem)


def test_reset_retries_a_failing_server_on_new_leases(sim_server, monkeypatch):
    srv = sim_server(process_factory=FailingStart, max_processes=4)
    env = make(srv, theorem=AND, policy=NO_AXIOM_CHECK)
    monkeypatch.setattr(FailingStart, "failures", 2)
    obs, _ = env.reset(seed=0)  # two 500s, then a start on the third lease
    assert obs.endswith("⊢ p ∧ q") and used(srv) == 1  # the failed leases went back
    monkeypatch.setattr(FailingStart, "failures", 10)
    with pytest.raises(ServerError, match="REPL process died"):
        env.reset()
    assert FailingStart.failures == 10 - env.unwrapped.reset_attempts
    env.close()
    assert used(srv) == 0


def test_leases_are_returned_on_close_and_when_dropped(sim_server):
    srv = sim_server(max_processes=2)
    env = make(srv)
    env.reset(seed=0)
    env.reset(seed=1)  # the lease is kept across episodes
    assert used(srv) == 1
    env.close()
    env.close()  # idempotent
    assert used(srv) == 0
    env = make(srv)
    env.reset(seed=0)
    assert used(srv) == 1
    del env
    gc.collect()
    assert used(srv) == 0


class _Hanging(ScriptedProcess):
    """A process whose ``proof_from_sorry`` hangs until ``release`` is set."""

    def __init__(self, release: threading.Event, factorized: bool = False) -> None:
        super().__init__(factorized)
        self.release = release

    def proof_from_sorry(self, theorem: str):
        self.release.wait(60)
        return super().proof_from_sorry(theorem)


@pytest.fixture
def hang(sim_server):
    """An Event set at teardown (before the servers stop), so no server thread is left hanging."""
    release = threading.Event()
    yield release
    release.set()


def test_a_hung_server_costs_one_read_timeout(sim_server, hang, monkeypatch):
    """A server slower than ``read_timeout_s``: reset raises ServerTimeout after one attempt, not four."""
    from leangym.backends.leantree import LeanTreeClient
    from leangym.backends.types import ServerTimeout

    starts = []
    real = LeanTreeClient.proof_from_sorry
    monkeypatch.setattr(LeanTreeClient, "proof_from_sorry", lambda self, *a: starts.append(a) or real(self, *a))
    srv = sim_server(process_factory=lambda factorized: _Hanging(hang, factorized))
    env = LeanProofEnv(AND, server=srv.url, read_timeout_s=0.3)
    with pytest.raises(ServerTimeout, match="read timeout"):
        env.reset(seed=0)
    assert len(starts) == 1 and env.reset_attempts == 4
    env.close()


def test_a_kept_lease_is_recycled_every_n_episodes():
    """A Lean process keeps every state until it is returned: a long run must not grow it forever."""
    made = []

    def factory():
        made.append(LocalProcess())
        return made[-1]

    env = LeanProofEnv(ONE, process_factory=factory, episodes_per_lease=3)
    for _ in range(7):
        env.reset()
        env.step("exact nothing")  # (a proof's final check would move to a fresh lease)
    assert len(made) == 3  # episodes 1-3, 4-6, 7
    env.close()
    with pytest.raises(ValueError, match="episodes_per_lease"):
        LeanProofEnv(ONE, process_factory=factory, episodes_per_lease=0)


def test_an_env_dropped_without_close_gives_its_lease_back_at_once(sim_server):
    """No reference cycle holds the lease (session <-> its metered process was one): dropping the env
    returns it by reference counting, not at the cycle collector's next pass, which a loop waiting for
    a free process never triggers."""
    srv = sim_server(max_processes=1)
    gc.disable()
    try:
        for _ in range(3):  # on a pool of one: each env needs the one before it gone
            env = make(srv, theorem=ONE, lease_timeout_s=2.0)
            env.reset(seed=0)
            env.step("constructor")
            del env
            assert used(srv) == 0
    finally:
        gc.enable()


def test_after_a_hang_reset_asks_the_server_before_it_leases(sim_server):
    """A step the server did not answer truncates; the next reset first checks that the server answers
    (briefly) and raises ServerTimeout while it is still hung, without a lease request it could grant
    after the client gave up (a process nobody would ever return). Once it answers, resets work."""
    srv = sim_server(max_processes=2)
    env = make(srv, theorem=ONE, read_timeout_s=0.5, lease_timeout_s=1.0)
    env.reset(seed=0)
    hung, paths = threading.Event(), []
    real_begin = srv.server.begin_request

    def begin(path, *args, **kw):
        if hung.is_set():
            paths.append(path)
            time.sleep(1.0)  # longer than the client's read timeout
        return real_begin(path, *args, **kw)

    srv.server.begin_request = begin
    hung.set()
    _, _, terminated, truncated, info = env.step("constructor")
    assert truncated and not terminated and "server failure" in info["error"]
    with pytest.raises(ServerTimeout):
        env.reset(seed=0)
    hung.clear()
    assert "/process/get" not in paths
    obs, _ = env.reset(seed=0)
    assert obs == ONE_OBS
    env.close()
    deadline = time.monotonic() + 10
    while used(srv) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert used(srv) == 0
