"""``python -m agents.alphaproof.actor``: an actor process that joins a training run (see distributed/actor.py).

    python -m agents.alphaproof.actor --connect tcp://LEARNER:PORT --actors 64 --server http://LEAN:8000
    python -m agents.alphaproof.actor --connect tcp://LEARNER:5555 --keys keys/ --actors 32   # the simulator

It can start before the learner and outlive it: it keeps saying hello until a learner answers.
"""
from __future__ import annotations

import logging
from typing import Sequence

from agents.alphaproof.distributed.actor import Actor, ActorOptions
from agents.alphaproof.distributed.sockets import client_keys, tcp_endpoint
from leangym.cli import ArgumentParser, HelpFormatter, run_cli


def parse_args(argv: Sequence[str] | None = None) -> ActorOptions:
    p = ArgumentParser(prog="python -m agents.alphaproof.actor", formatter_class=HelpFormatter,
                       description="An actor of a distributed AlphaProof training run: proof searches on this "
                                   "machine, the network on the learner.")
    p.add_argument("--connect", required=True, type=tcp_endpoint, metavar="tcp://HOST:PORT",
                   help="the learner's address (it prints it at start)")
    p.add_argument("--actors", type=int, default=16, help="concurrent proof searches in this process")
    p.add_argument("--server", default=None, metavar="URL[,URL...]",
                   help="LeanTree server(s) to lease Lean processes from, round robin (default: the "
                        "simulator, in this process)")
    p.add_argument("--keys", type=client_keys, default=None, metavar="DIR",
                   help="CurveZMQ keys (client.key_secret, server.key)")
    p.add_argument("--name", default=None, help="this actor's name in the learner's tables (default: HOST-PID)")
    p.add_argument("--parent", type=int, default=None, help=argparse_suppress())
    p.add_argument("--infer-timeout", type=float, default=120.0,
                   help="seconds to wait for an inference answer before starting over (the learner is gone)")
    p.add_argument("--join-timeout", type=float, default=None,
                   help="give up (exit status 1) when no learner answers this many seconds (default: keep trying)")
    ns = p.parse_args(argv)
    if ns.actors < 1:
        p.error("--actors must be at least 1")
    return ActorOptions(connect=ns.connect, actors=ns.actors, server=ns.server, keys=ns.keys, name=ns.name,
                        parent=ns.parent, infer_timeout=ns.infer_timeout, join_timeout=ns.join_timeout)


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS  # (--parent: set by the learner for the actors it starts)


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="[actor] %(message)s")
    raise SystemExit(Actor(parse_args(argv)).run())


if __name__ == "__main__":
    run_cli(main)
