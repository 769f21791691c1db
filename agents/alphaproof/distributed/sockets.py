"""ZeroMQ sockets of the distributed run: where they bind, CurveZMQ, and receiving without crashing.

Servers (learner side) bind 127.0.0.1 unless ``--bind`` says otherwise. With
``--keys DIR`` (made by ``python -m agents.alphaproof.keys DIR``) every socket
speaks CurveZMQ: the learner's sockets accept only clients whose public key
is in ``DIR/authorized/``, and an actor must hold a client secret key and the
server's public key; without them it cannot connect, send rows or read weights.
"""
from __future__ import annotations

import argparse
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import zmq
import zmq.auth

from agents.alphaproof.distributed.wire import Message, Schema, unpack

log = logging.getLogger("agents.alphaproof.distributed")


MAX_FRAME = 64 << 20  # bytes a frame sent to the learner may hold (a result of 500 rows is ~100 KB)


@dataclass(frozen=True)
class Keys:
    """The CurveZMQ keys in a ``--keys`` directory (see :mod:`agents.alphaproof.distributed.keys`)."""

    directory: Path

    def _cert(self, name: str, secret: bool) -> tuple[bytes, bytes | None]:
        path = self.directory / (f"{name}.key_secret" if secret else f"{name}.key")
        if not path.is_file():
            raise ValueError(f"--keys {self.directory}: {path.name} is missing; make the keys with "
                             f"`python -m agents.alphaproof.keys {self.directory}` (the learner needs "
                             "server.key_secret and authorized/; an actor needs client.key_secret and server.key)")
        return zmq.auth.load_certificate(str(path))

    def check(self, server: bool) -> None:
        """ValueError naming what is missing, before a run starts: the learner needs ``server.key_secret`` and
        ``authorized/``; an actor, ``client.key_secret`` and ``server.key``."""
        if server:
            self._cert("server", secret=True)
            if not (self.directory / "authorized").is_dir():
                raise ValueError(f"--keys {self.directory}: no authorized/ folder of client public keys; make the "
                                 f"keys with `python -m agents.alphaproof.keys {self.directory}`")
        else:
            self._cert("client", secret=True)
            self._cert("server", secret=False)

    def secure_server(self, sock: zmq.Socket) -> None:
        public, secret = self._cert("server", secret=True)
        sock.curve_secretkey, sock.curve_publickey, sock.curve_server = secret, public, True

    def secure_client(self, sock: zmq.Socket) -> None:
        public, secret = self._cert("client", secret=True)
        server_public, _ = self._cert("server", secret=False)
        sock.curve_secretkey, sock.curve_publickey, sock.curve_serverkey = secret, public, server_public


class _Refusals(logging.LoggerAdapter):
    """pyzmq's authenticator says a refused client key at debug level: a warning here, once a key."""

    def __init__(self, directory: Path) -> None:
        super().__init__(logging.getLogger("agents.alphaproof.distributed.auth"), {})
        self.directory, self.seen = directory, set()

    def debug(self, msg, *args, **kwargs) -> None:
        key = args[-1] if args else None  # ("%s (CURVE) domain=%s client_key=%s", "DENIED", domain, key)
        if args[:1] == ("DENIED",) and key not in self.seen:
            self.seen.add(key)
            self.logger.warning("refused a connection whose client key is not in %s/authorized (an actor with "
                                "other --keys)", self.directory)


class Net:
    """One process's ZeroMQ context, with its CurveZMQ authenticator when ``keys`` is given."""

    def __init__(self, keys: str | None = None, server: bool = False) -> None:
        self.ctx = zmq.Context()
        self.keys = Keys(Path(keys)) if keys else None
        self.auth = None
        self._lock = threading.Lock()
        if self.keys and server:
            from zmq.auth.thread import ThreadAuthenticator

            self.keys.check(server=True)
            authorized = self.keys.directory / "authorized"
            self.auth = ThreadAuthenticator(self.ctx, log=_Refusals(self.keys.directory))
            self.auth.start()
            self.auth.configure_curve(domain="*", location=str(authorized))

    def bind(self, kind: int, host: str = "127.0.0.1", port: int = 0) -> tuple[zmq.Socket, int]:
        """A server socket on ``host:port`` (0: a free port); returns it and its port."""
        sock = self.socket(kind, server=True)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME)  # a peer that sends more is disconnected, not buffered
        sock.setsockopt(zmq.IPV6, int(host.startswith("[")))  # ([::], [::1]: IPv6 hosts are bracketed)
        try:
            if port:
                sock.bind(f"tcp://{host}:{port}")
            else:
                port = sock.bind_to_random_port(f"tcp://{host}")
        except zmq.ZMQError as e:
            sock.close(linger=0)
            raise ValueError(f"--bind {host}:{port or '(a free port)'}: {e}: the port may be another process's "
                             "(choose another, or give no port: a free one), or the host none of this machine's "
                             "addresses (0.0.0.0: all of them)") from None
        return sock, port

    def connect(self, kind: int, endpoint: str, identity: bytes | None = None) -> zmq.Socket:
        sock = self.socket(kind, server=False)
        sock.setsockopt(zmq.IPV6, int(host_of(endpoint).startswith("[")))
        if identity is not None:
            sock.setsockopt(zmq.IDENTITY, identity)
        sock.connect(endpoint)
        return sock

    def socket(self, kind: int, server: bool) -> zmq.Socket:
        with self._lock:  # (the context is shared by threads; socket creation is its only shared step)
            sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)  # a stopped process leaves nothing waiting to send
        if self.keys:
            (self.keys.secure_server if server else self.keys.secure_client)(sock)
        return sock

    def close(self) -> None:
        if self.auth is not None:
            self.auth.stop()
        self.ctx.destroy(linger=0)


def receive(sock: zmq.Socket, expect: Mapping[str, Schema], routed: bool = False
            ) -> tuple[bytes | None, Message] | None:
    """One message (non-blocking: call after a poll), checked; ``routed``: a ROUTER's, with the
    sender's identity first. A malformed message is logged and dropped: None."""
    frames = sock.recv_multipart(copy=False)
    ident = None
    if routed:
        ident, frames = frames[0].bytes, frames[1:]
    try:
        return ident, unpack([f.buffer for f in frames], expect)
    except Exception as e:  # noqa: BLE001 -- WireError, or whatever else unpack met: never a crash
        log.warning("dropped a malformed message%s: %s", f" from {ident!r}" if ident else "", str(e)[:300])
        return None


def host_of(endpoint: str) -> str:
    """``tcp://HOST:PORT`` -> HOST."""
    rest = endpoint.split("://", 1)[-1]
    return rest.rsplit(":", 1)[0]


def parse_bind(text: str) -> tuple[str, int]:
    """``--bind HOST[:PORT]`` -> (host, port); port 0: a free one."""
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "0")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--bind {text!r}: expected HOST or HOST:PORT (e.g. 0.0.0.0:5555)")
    return host, int(port)


def tcp_endpoint(text: str) -> str:
    """``--connect tcp://HOST:PORT`` as given (an argparse ``type``: anything else is one error line)."""
    host, _, port = text[len("tcp://"):].rpartition(":")
    if not text.startswith("tcp://") or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected tcp://HOST:PORT (the learner prints it)")
    return text


def client_keys(text: str) -> str:
    """``--keys DIR`` of an actor or ``status`` (an argparse ``type``): its client keys, checked before it joins."""
    try:
        Keys(Path(text)).check(server=False)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--keys {text}: ")) from None
    return text


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
