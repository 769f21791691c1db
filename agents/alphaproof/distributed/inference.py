"""The inference service: one forward pass for the leaf evaluations of every actor.

Each actor's batched search calls ``evaluator.evaluate(states, k)`` once per round
(:class:`RemoteEvaluator`): one ``eval`` message to a learner rank's ROUTER. The
service (a thread of that rank) gathers requests until ``max_batch`` states wait
(``--infer-batch``: by default one leaf per search of the run), or every actor
expected back soon has one waiting (answered lately, within twice its usual time
between an answer and its next request), or the oldest has waited ``max_wait_s``;
then runs ONE ``net.evaluate`` over all that wait and answers each with its slice
and the weight version used. Requests that come during a forward pass share the
next one, so batches grow with the load. The wait is short by default (5 ms): at
50 ms per Lean call, waiting longer for other actors cost more search time than
the bigger batch saved (benchmarks/results/distributed.md); a long one (2000 ms)
keeps the actors in step, for full batches where the forward pass is what is short.
The learner publishes new weights with :meth:`InferenceService.publish`; they are
loaded between batches.
"""
from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import zmq

from agents.alphaproof.distributed.sockets import Net, log, receive
from agents.alphaproof.distributed.wire import EVAL_REPLY, EVAL_REQUEST, pack, read_strings, string_arrays
from agents.alphaproof.interfaces import Evaluation, per_state

MAX_STATES = 65536  # a request asking more is malformed (an actor sends its round's leaves)
MERGE_CAP = 4  # a forward pass takes every request waiting, up to this many times max_batch states


@dataclass
class InferenceStats:
    batches: int = 0
    states: int = 0
    fill_sum: float = 0.0  # sum over batches of states / max_batch
    wait_s: float = 0.0  # summed over requests: arrival to the start of their forward pass
    requests: int = 0
    forward_s: float = 0.0
    queue: int = 0  # requests waiting now
    version: int = 0

    def snapshot(self) -> dict[str, float]:
        b, r = max(1, self.batches), max(1, self.requests)
        return {"batches": self.batches, "batch_mean": self.states / b, "fill": self.fill_sum / b,
                "queue_wait_ms": 1e3 * self.wait_s / r, "forward_s": self.forward_s, "queue": self.queue,
                "version": self.version}


@dataclass
class _Request:
    ident: bytes
    id: int
    states: list[str]
    ks: list[int]
    arrived: float = field(default_factory=time.monotonic)


class InferenceService:
    """A thread serving ``net`` on a ROUTER socket (bound at construction; ``port`` tells where)."""

    def __init__(self, net, znet: Net, host: str = "127.0.0.1", max_batch: int = 256, max_wait_s: float = 0.005,
                 port: int = 0) -> None:
        self.net, self.max_batch, self.max_wait_s = net, max(1, max_batch), max_wait_s
        self.sock, self.port = znet.bind(zmq.ROUTER, host, port)
        self.stats = InferenceStats()
        self._pending: tuple[dict, int] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # actor socket -> (when it was last answered, its usual time from an answer to its next request)
        self._seen: dict[bytes, tuple[float, float]] = {}
        self._thread = threading.Thread(target=self._serve, name="inference", daemon=True)
        self.error: BaseException | None = None  # what stopped the thread (a forward pass out of GPU memory ...)

    def start(self) -> "InferenceService":
        self._thread.start()
        return self

    def raise_if_failed(self) -> None:
        """The run stops, saying why, when the service has (its actors would only time out, again and again)."""
        if self.error is not None:
            raise RuntimeError(f"the inference service stopped: {type(self.error).__name__}: {self.error} "
                               "(for GPU memory: a smaller --infer-batch or --actors)") from self.error

    def publish(self, state_dict: dict[str, torch.Tensor], version: int) -> None:
        """New weights (copied by the caller), loaded before the next batch."""
        with self._lock:
            self._pending = (state_dict, version)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.sock.close(linger=0)

    # ------------------------------------------------------------------ the thread
    def _serve(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # (the learner's loop raises it: see raise_if_failed)
            log.error("the inference service stopped: %s: %s", type(e).__name__, e)
            self.error = e

    def _loop(self) -> None:
        torch.set_num_threads(max(1, torch.get_num_threads()))
        device = getattr(self.net, "device", None)
        if device is not None and device.type == "cuda":
            torch.cuda.set_device(device)  # (a new thread's current GPU is cuda:0)
        queue: list[_Request] = []
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        while not self._stop.is_set():
            timeout = 100 if not queue else max(0.0, 1e3 * (queue[0].arrived + self.max_wait_s - time.monotonic()))
            if poller.poll(timeout):
                while self.sock.poll(0):
                    req = self._read()
                    if req is not None:
                        queue.append(req)
                        self._came_back(req)
            self.stats.queue = len(queue)
            if queue and self._ready(queue):
                batch, queue = self._take(queue)
                self._forward(batch)

    def _ready(self, queue: list[_Request]) -> bool:
        now = time.monotonic()
        if sum(len(r.states) for r in queue) >= self.max_batch or now - queue[0].arrived >= self.max_wait_s:
            return True
        # actors expected back soon: answered lately, within twice their usual time between answer and request
        waiting = {r.ident for r in queue}
        return all(i in waiting or now - answered > 2 * gap + 0.005 for i, (answered, gap) in self._seen.items())

    def _came_back(self, req: _Request) -> None:
        answered, gap = self._seen.get(req.ident, (None, self.max_wait_s))
        if answered is not None:
            gap = 0.7 * gap + 0.3 * (req.arrived - answered)
        self._seen[req.ident] = (float("inf"), gap)  # (waiting: not expected until answered)

    def _take(self, queue: list[_Request]) -> tuple[list[_Request], list[_Request]]:
        """Whole requests, at least one: all that wait, unless they hold over ``MERGE_CAP`` x max_batch states."""
        batch, n = [], 0
        for i, r in enumerate(queue):
            if batch and n + len(r.states) > MERGE_CAP * self.max_batch:
                return batch, queue[i:]
            batch.append(r)
            n += len(r.states)
        return batch, []

    def _read(self) -> _Request | None:
        got = receive(self.sock, EVAL_REQUEST, routed=True)
        if got is None:
            return None
        ident, msg = got
        try:
            n = msg["n"]
            if not 0 <= n <= MAX_STATES:
                raise ValueError(f"n={n}")
            states = read_strings(msg, "state", n)
            ks = msg.arrays["k"].tolist()
            if len(ks) != n or any(not 0 <= k <= 256 for k in ks):
                raise ValueError("k must hold n counts in 0..256")
        except ValueError as e:
            log.warning("dropped a malformed eval request: %s", e)
            return None
        return _Request(ident, msg["id"], states, ks)

    def _forward(self, batch: list[_Request]) -> None:
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            self.net.model.load_state_dict(pending[0])
            self.stats.version = pending[1]
        states = [s for r in batch for s in r.states]
        ks = [k for r in batch for k in r.ks]
        t0 = time.monotonic()
        evals = self.net.evaluate(states, ks) if states else []
        st = self.stats
        st.forward_s += time.monotonic() - t0
        st.batches += 1
        st.states += len(states)
        st.fill_sum += min(1.0, len(states) / self.max_batch)
        st.requests += len(batch)
        st.wait_s += sum(t0 - r.arrived for r in batch)
        at, now = 0, time.monotonic()
        for r in batch:
            self._reply(r, evals[at:at + len(r.states)])
            at += len(r.states)
            self._seen[r.ident] = (now, self._seen.get(r.ident, (now, self.max_wait_s))[1])
        if len(self._seen) > 4096:  # actors come and go: forget the long gone
            self._seen = {i: v for i, v in self._seen.items() if now - v[0] < 60}

    def _reply(self, r: _Request, evals: Sequence[Evaluation]) -> None:
        tactics = [t for e in evals for t in e.tactics]
        arrays = {**string_arrays("tactic", tactics),
                  "count": np.array([len(e.tactics) for e in evals], dtype=np.int32),
                  "logp": np.array([lp for e in evals for lp in e.log_priors], dtype=np.float32),
                  "value": np.array([e.value for e in evals], dtype=np.float32)}
        frames = pack("evals", {"id": r.id, "n": len(evals), "version": self.stats.version}, arrays)
        try:
            self.sock.send_multipart([r.ident, *frames], flags=zmq.NOBLOCK)
        except zmq.Again:  # the actor is gone (its queue is full): it will time out and start over
            pass


# ============================================================================ the actor's side
class InferenceLost(RuntimeError):
    """No answer from the inference service in time (the learner is gone or restarting)."""


class RemoteEvaluator:
    """``interfaces.Evaluator`` over the network: each call goes to one of the learner ranks' services
    (round robin), and waits for its answer at most ``timeout_s``."""

    def __init__(self, znet: Net, endpoints: Sequence[str], timeout_s: float = 120.0, should_stop=None) -> None:
        if not endpoints:
            raise ValueError("no inference endpoint")
        self.socks = [znet.connect(zmq.DEALER, e) for e in endpoints]
        self.timeout_s, self.should_stop = timeout_s, should_stop or (lambda: False)
        self._ids, self._next = itertools.count(1), 0
        self.versions: list[int] = []  # weight version of every answer, in order
        self.seconds = 0.0
        self.batch_sizes: list[int] = []

    def evaluate(self, states: Sequence[str], k: int | Sequence[int]) -> list[Evaluation]:
        if not states:
            return []
        ks = per_state(k, len(states))
        sock = self.socks[self._next % len(self.socks)]
        self._next += 1
        rid = next(self._ids)
        t0 = time.monotonic()
        sock.send_multipart(pack("eval", {"id": rid, "n": len(states)},
                                 {**string_arrays("state", list(states)), "k": np.array(ks, dtype=np.int32)}))
        deadline = t0 + self.timeout_s
        while True:
            if self.should_stop():
                raise InferenceLost("the actor is stopping")
            left = deadline - time.monotonic()
            if left <= 0:
                raise InferenceLost(f"no answer from the inference service in {self.timeout_s:g} s")
            if not sock.poll(int(1e3 * min(left, 0.5))):
                continue
            got = receive(sock, EVAL_REPLY)
            if got is None or got[1]["id"] != rid:
                continue  # malformed (logged), or the answer to a request that timed out earlier
            msg = got[1]
            try:
                evals = _evaluations(msg, len(states))
            except ValueError as e:
                log.warning("dropped a malformed eval answer: %s", e)
                continue
            self.seconds += time.monotonic() - t0
            self.batch_sizes.append(len(states))
            self.versions.append(msg["version"])
            return evals

    def close(self) -> None:
        for s in self.socks:
            s.close(linger=0)


def _evaluations(msg, n: int) -> list[Evaluation]:
    if msg["n"] != n:
        raise ValueError(f"{msg['n']} evaluations for {n} states")
    counts = msg.arrays["count"].tolist()
    if len(counts) != n or any(c < 0 for c in counts) or len(msg.arrays["value"]) != n:
        raise ValueError("counts or values disagree with n")
    tactics = read_strings(msg, "tactic", sum(counts))
    logp = msg.arrays["logp"].tolist()
    if len(logp) != len(tactics):
        raise ValueError("log-priors disagree with the tactics")
    values = msg.arrays["value"].tolist()
    out, at = [], 0
    for c, v in zip(counts, values):
        out.append(Evaluation(tuple(tactics[at:at + c]), tuple(logp[at:at + c]), float(min(1.0, max(0.0, v)))))
        at += c
    return out
