"""A thread pool for calls that wait on a server, which never holds up Ctrl-C or exit.

:class:`DaemonPool` runs ``map(fn, items)`` on daemon threads: results in input
order, the first exception re-raised once the calls still running have ended
(``submit`` starts one call and hands back its future).

Why not a ``ThreadPoolExecutor``: the interpreter joins an executor's threads at
exit, even after ``shutdown(wait=False)``, so one thread waiting on a hung
server (a read timeout per call, two minutes by default) would hold up Ctrl-C or
SIGTERM. A daemon thread is left behind instead. And the caller waits in short
slices: one long wait is a lock acquire in C, and a SIGINT that lands just before
it starts (or on another thread) is handled only when the wait ends.
"""
from __future__ import annotations

import queue
import threading
import weakref
from concurrent.futures import ALL_COMPLETED, FIRST_EXCEPTION, Future
from concurrent.futures import wait as wait_futures
from typing import Any, Callable, Iterable

__all__ = ["DaemonPool"]

_SLICE_S = 0.1  # longest wait before a pending signal (Ctrl-C) gets handled


def _wait(futures: list[Future], return_when: str) -> bool:
    """Wait in short slices; with ``FIRST_EXCEPTION``, returns whether a call failed."""
    pending = set(futures)
    while pending:
        done, pending = wait_futures(pending, timeout=_SLICE_S, return_when=return_when)
        if return_when == FIRST_EXCEPTION and any(not f.cancelled() and f.exception() is not None for f in done):
            return True
    return False


def _work(jobs: queue.SimpleQueue, local: threading.local) -> None:
    # holds the queue, not the pool: a pool dropped without close() is still collected (see below)
    local.in_worker = True
    while (job := jobs.get()) is not None:
        future, fn, item = job
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(item))
            except BaseException as e:  # noqa: BLE001 -- handed to the caller by map()
                future.set_exception(e)
        # An idle thread must not keep its last call alive: ``fn`` may hold the pool's owner (a
        # vector env), whose collection is what closes it and gives its Lean leases back.
        del job, future, fn, item


def _stop(jobs: queue.SimpleQueue, n: int) -> None:
    for _ in range(n):
        jobs.put(None)


class DaemonPool:
    """``n`` daemon threads; :meth:`map` is ``[fn(x) for x in items]``, run concurrently."""

    def __init__(self, n: int, name: str = "leangym-pool") -> None:
        if n < 1:
            raise ValueError(f"a pool needs at least one thread, got {n}")
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._local = threading.local()  # .in_worker: this thread is one of the pool's
        self._lock = threading.Lock()  # a map() enqueues all its calls before close() enqueues the stops
        self._unfinished: list[Future] = []  # calls that an interrupted map() left running (see settle)
        for i in range(n):
            threading.Thread(target=_work, args=(self._jobs, self._local), name=f"{name}-{i}", daemon=True).start()
        # close() or garbage collection: every thread ends after its current call
        self._close = weakref.finalize(self, _stop, self._jobs, n)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """Results in input order. If a call raises, the calls not yet started are cancelled, the
        running ones are waited for (they may hold a lease the caller is about to give back), and
        the first exception (in input order) is raised. On Ctrl-C, nothing not yet started will start, and
        the calls already running go on: :meth:`settle` waits for them."""
        if getattr(self._local, "in_worker", False):
            # called from one of the pool's own calls (e.g. an env closed by its collection in a
            # worker): waiting for the other threads could wait for this one, so run inline
            return [fn(x) for x in items]
        futures = []
        with self._lock:
            if not self._close.alive:
                raise RuntimeError("this DaemonPool is closed")
            for item in items:
                futures.append(Future())
                self._jobs.put((futures[-1], fn, item))
        try:
            if not _wait(futures, FIRST_EXCEPTION):
                return [f.result() for f in futures]
            # A call failed: the others may be inside a Lean call on their lease. Wait for them (each
            # call ends within the read timeout) before the caller gives the leases back, or a pid
            # could be returned, and leased again, while a request is still running on it.
            for f in futures:
                f.cancel()
            _wait(futures, ALL_COMPLETED)
            raise next(e for f in futures if not f.cancelled() and (e := f.exception()) is not None)
        finally:
            for f in futures:  # after an interrupt: what has not started never will
                f.cancel()
            self._unfinished += [f for f in futures if not f.done()]  # ... and what has is still running

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Future:
        """``fn(item)`` on one of the threads; the caller checks the future (``done()``) when it likes."""
        with self._lock:
            if not self._close.alive:
                raise RuntimeError("this DaemonPool is closed")
            future: Future = Future()
            self._jobs.put((future, fn, item))
        return future

    def settle(self) -> None:
        """Wait for the calls that an interrupted :meth:`map` left running (each ends within its own timeout).

        For callers whose calls share state across maps (a sub-env, its lease): settling before the next
        map means no object is used by two threads at once. A second Ctrl-C ends this wait as well.
        Exit and ``close()`` never wait for them (a call may hang on a server for its whole timeout).
        """
        _wait(self._unfinished, ALL_COMPLETED)
        self._unfinished = [f for f in self._unfinished if not f.done()]

    def close(self) -> None:
        """Let every thread end after its current call; nobody waits for them. Idempotent."""
        with self._lock:
            self._close()
