"""``python -m agents.alphaproof.keys DIR``: the CurveZMQ keys of a distributed run.

Makes ``DIR/server.key`` + ``server.key_secret`` (the learner's pair), ``DIR/client.key`` +
``client.key_secret`` (the actors' pair) and ``DIR/authorized/client.key`` (the client
public keys the learner accepts; add more there to admit other key pairs). The learner
needs ``server.key_secret`` and ``authorized/``; an actor machine needs only
``client.key_secret`` and ``server.key``. Secret files are made readable by their owner only.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Sequence

import zmq.auth

from leangym.cli import ArgumentParser, HelpFormatter, run_cli


def make_keys(directory: str | os.PathLike, overwrite: bool = False) -> Path:
    d = Path(directory)
    if (d / "server.key_secret").exists() and not overwrite:
        raise ValueError(f"{d} already holds keys (server.key_secret); pass --overwrite to replace them "
                         "(every actor then needs the new client key)")
    (d / "authorized").mkdir(parents=True, exist_ok=True)
    for name in ("server", "client"):
        _, secret = zmq.auth.create_certificates(str(d), name)
        os.chmod(secret, 0o600)
    shutil.copy(d / "client.key", d / "authorized" / "client.key")
    return d


def main(argv: Sequence[str] | None = None) -> None:
    p = ArgumentParser(prog="python -m agents.alphaproof.keys", formatter_class=HelpFormatter,
                       description=__doc__.split("\n\n")[1].replace("``", ""))
    p.add_argument("dir", help="where to write the keys (made if missing)")
    p.add_argument("--overwrite", action="store_true", help="replace keys already there")
    ns = p.parse_args(argv)
    d = make_keys(ns.dir, ns.overwrite)
    print(f"keys written to {d}: start the learner with --keys {d}; copy {d}/client.key_secret and "
          f"{d}/server.key to each actor machine and pass --keys there", file=sys.stderr)


if __name__ == "__main__":
    run_cli(main)
