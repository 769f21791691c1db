"""Reading raw HTTP answers off a socket, for the server tests that speak HTTP by hand."""
from __future__ import annotations

import json
import socket
import weakref

_unread: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # socket -> bytes after its last answer


def read_answer(s: socket.socket) -> tuple[int, dict, bytes]:
    """The next answer from ``s``: (status, JSON body, head)."""
    data = _unread.pop(s, b"")
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")))
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        body += chunk
    _unread[s] = body[length:]
    return int(head.split()[1]), json.loads(body[:length]), head
