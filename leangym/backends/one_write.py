"""A ``requests`` adapter whose connections send each request in one write.

urllib3 writes a request's line and headers with one ``send`` and its body with
another. On a keep-alive connection to a LeanTree server that is two system
calls and two wake-ups of the server's reader per call, and - since every
system call lets other threads take the GIL - two places per call where a
thread of a vector env can be overtaken by the other threads' request
building. Buffering the writes until the response is read makes it one (as
``http.client`` itself does for a bytes body). Everything else - pooling,
keep-alive, timeouts, errors - is the stock ``HTTPAdapter``'s.
"""
from __future__ import annotations

from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool

__all__ = ["OneWriteAdapter"]


class OneWriteConnection(HTTPConnection):
    """An urllib3 ``HTTPConnection`` that holds back byte writes until ``getresponse``."""

    _pending: bytes | None = None

    def send(self, data: Any) -> None:  # http.client / urllib3 send headers, then the body
        if self.sock is None:
            # Connect now, inside request(), as the stock connection does: urllib3 switches
            # the socket from the connect timeout to the read timeout only if it is open
            # once request() returns.
            self.connect()
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._pending = bytes(data) if self._pending is None else self._pending + bytes(data)
            return
        self._flush()
        super().send(data)  # a file or iterable body: stream it as usual

    def _flush(self) -> None:
        if self._pending is not None:
            data, self._pending = self._pending, None
            super().send(data)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        self._flush()
        return super().getresponse(*args, **kwargs)

    def close(self) -> None:
        self._pending = None
        super().close()


class OneWriteConnectionPool(HTTPConnectionPool):
    ConnectionCls = OneWriteConnection


class OneWriteAdapter(HTTPAdapter):
    """``HTTPAdapter`` for ``http://`` whose pooled connections write each request once."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {**self.poolmanager.pool_classes_by_scheme,
                                                   "http": OneWriteConnectionPool}
