"""leangym.backends.select.open_backend: the one place that decides 'a server URL, or the in-process simulator'."""
from __future__ import annotations

import socket

import pytest

from leangym.backends.leantree import HttpLease
from leangym.backends.select import LocalFactory, ServerLeaser, open_backend
from leangym.backends.types import ServerUnavailable
from leangym.sim.local import LocalProcess

from conftest import scripted


def test_no_server_is_the_in_process_simulator():
    for server in (None, ""):
        source = open_backend(server, factorized=False)
        assert isinstance(source, LocalFactory) and source.in_process
        process = source()
        assert isinstance(process, LocalProcess) and process.identity().generation == "single-branch"
        process.close()


def test_a_url_gives_leases_of_that_server(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2)
    source = open_backend(srv.url.removeprefix("http://"), check=True, processes=2)  # (no scheme: http)
    assert isinstance(source, ServerLeaser) and source.url == srv.url and not source.in_process
    lease = source()
    assert isinstance(lease, HttpLease) and srv.server.status()["used_processes"] == 1
    lease.close()
    source.close()
    assert srv.server.status()["used_processes"] == 0


def test_a_pool_too_small_and_a_server_away_are_refused_at_once(sim_server):
    srv = sim_server(process_factory=scripted, max_processes=2)
    with pytest.raises(ValueError, match=r"--actors 3 needs 3 Lean processes.*runs at most 2: restart it with "
                                         r"--max-processes 3"):
        open_backend(srv.url, processes=3, what="--actors 3")
    with socket.socket() as s:  # bound, never listening: refused
        s.bind(("127.0.0.1", 0))
        with pytest.raises(ServerUnavailable, match="python -m leangym.sim.server"):
            open_backend(f"http://127.0.0.1:{s.getsockname()[1]}", check=True)


@pytest.mark.parametrize("url", ["ftp://host:8000", "http://host:port", "http://:8000"])
def test_a_url_that_names_no_server_is_a_clear_error(url):
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        open_backend(url)


def test_the_read_timeout_must_be_positive():
    with pytest.raises(ValueError, match="read timeout"):
        open_backend("http://127.0.0.1:8000", read_timeout_s=0)
