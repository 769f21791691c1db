"""The LeanTree server a benchmark command talks to: ``--server``, else ``$LEANGYM_SERVER``, else one
simulated here (which the command says: its numbers are about the simulator, not about Lean)."""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from typing import Any

from leangym.backends.leantree import pool_size
from leangym.envs.server_lease import SERVER_ENV_VAR


# `constructor` leaves two goals that share no metavariable: one branch each on a factorizing server, one
# branch holding both on an older one (leantree-protocol.md, "Branches: two server generations").
GENERATION_PROBE = "theorem leangym_generation_probe (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry"


def probe_generation(client: Any) -> str:
    """The server's generation from one proof start and one tactic on a lease of its own ("unknown" if
    no process is free within 10 s or the probe does not run): a server claims none in ``/status``,
    and a resumed run must not continue on the other generation."""
    from leangym.backends.types import LeanError, Outcome, ServerError
    from leangym.theorem import Theorem

    try:
        with client.lease(blocking=True, timeout=10.0) as lease:
            result = lease.apply_tactic(lease.start_proof(Theorem(GENERATION_PROBE).start_source()), "constructor")
    except (ServerError, LeanError):
        return "unknown"
    if client.generation != "unknown":  # the client tells every generation apart from the start's answers
        return client.generation
    if result.outcome is not Outcome.PROGRESS:
        return "unknown"
    if len(result.states) == 2:
        return "factorized"
    return "single-branch" if len(result.states) == 1 and len(result.states[0].goals) == 2 else "unknown"


def _server_identity(client: Any, simulated: bool) -> dict[str, Any]:
    ident = client.identity()
    info = ident.info if isinstance(ident.info, dict) else {}
    sim = info.get("leangym") if isinstance(info.get("leangym"), dict) else {}
    generation = ident.generation if ident.generation != "unknown" else probe_generation(client)
    return {"url": ident.url, "generation": generation, "simulated": simulated or bool(sim.get("simulated")),
            "max_processes": pool_size(info),
            # identity only: the simulator's live counters (requests, load) would make headers differ run to run
            "leangym_status": {k: sim[k] for k in ("simulated", "generation", "version") if k in sim}}


def connect(args: argparse.Namespace, stack: ExitStack, processes: int) -> tuple[Any, dict[str, Any]]:
    """A client of ``--server`` (else ``$LEANGYM_SERVER``, else a simulated server started here with
    ``processes`` processes, which says so), closed with ``stack``; and the server's identity.
    ConnectionError if the server does not answer."""
    from leangym.backends.select import open_backend

    url = args.server or (None if args.sim or args.sim_factorized else os.environ.get(SERVER_ENV_VAR))
    simulated = url is None
    if simulated:
        from leangym.sim.server import SimServerConfig, start_server

        handle = start_server(SimServerConfig(max_processes=processes, factorized=args.sim_factorized))
        stack.callback(handle.stop)
        url = handle.url
        why = "--sim" if args.sim or args.sim_factorized else f"no --server and ${SERVER_ENV_VAR} unset"
        print(f"[benchmark] {why}: using an in-process SIMULATED LeanTree server at {url} "
              "(simulated Lean, not real Lean results)", file=sys.stderr)
    try:
        # (identity() below tolerates a silent server; a run must not start on one: check=True)
        leaser = open_backend(url, check=True)
        stack.callback(leaser.close)
        return leaser.client, _server_identity(leaser.client, simulated)
    except Exception as e:  # noqa: BLE001
        raise ConnectionError(f"cannot reach the server: {e}") from None
