"""The LeanTree server a benchmark command talks to: ``--server``, else ``$LEANGYM_SERVER``, else one
simulated here (which the command says: its numbers are about the simulator, not about Lean)."""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from typing import Any

SERVER_ENV = "LEANGYM_SERVER"


def _server_identity(client: Any, simulated: bool) -> dict[str, Any]:
    ident = client.identity()
    info = ident.info if isinstance(ident.info, dict) else {}
    sim = info.get("leangym") if isinstance(info.get("leangym"), dict) else {}
    return {"url": ident.url, "generation": ident.generation, "simulated": simulated or bool(sim.get("simulated")),
            "max_processes": info.get("max_processes"),
            # identity only: the simulator's live counters (requests, load) would make headers differ run to run
            "leangym_status": {k: sim[k] for k in ("simulated", "generation", "version") if k in sim}}


def connect(args: argparse.Namespace, stack: ExitStack, processes: int) -> tuple[Any, dict[str, Any]]:
    """A client of ``--server`` (else ``$LEANGYM_SERVER``, else a simulated server started here with
    ``processes`` processes, which says so), closed with ``stack``; and the server's identity.
    ConnectionError if the server does not answer."""
    from leangym.backends.leantree import LeanTreeClient

    url = args.server or (None if args.sim or args.sim_factorized else os.environ.get(SERVER_ENV))
    simulated = url is None
    if simulated:
        from leangym.sim.server import SimServerConfig, start_server

        handle = start_server(SimServerConfig(max_processes=processes, factorized=args.sim_factorized))
        stack.callback(handle.stop)
        url = handle.url
        why = "--sim" if args.sim or args.sim_factorized else f"no --server and ${SERVER_ENV} unset"
        print(f"[benchmark] {why}: using an in-process SIMULATED LeanTree server at {url} "
              "(simulated Lean, not real Lean results)", file=sys.stderr)
    client = LeanTreeClient(url)
    stack.callback(client.close)
    try:
        client.status()  # identity() below tolerates a silent server; a run must not start on one
        return client, _server_identity(client, simulated)
    except Exception as e:  # noqa: BLE001
        raise ConnectionError(f"cannot reach the server: {e}") from None
