"""The coordinator (on the learner, rank 0): theorem dispatch, heartbeats, requeues, results, status.

Actors pull work: ``want n`` is answered with up to n tasks, evaluation tasks
first, then theorems the learner draws from its curriculum at that moment
(``draw``). Every task handed out is held by its actor until its result
arrives. An actor whose heartbeats stop for ``heartbeat_timeout`` s (killed,
its machine gone) is dropped and its tasks go back to the queue, as does a
task its actor no longer lists (a lost result). Results come on a PULL socket
(the actors' PUSH, with a high-water mark for backpressure); a result for a
task nobody holds any more (requeued, then answered late) is dropped. A
theorem whose search the actor's Lean server failed (it could not start, the
server hung or vanished under it, or, for a held-out search, failed some of its
calls; a training search with failed calls is a result, as in-process) is no result:
it is requeued (``requeued``), that actor gets no work for a backoff (1, 2,
4 ... 30 s) so it does not spin, and while another live actor's server has not
failed it, it goes to that one. (A theorem the server failed SERVER_RETRIES
times, a start it failed included (a 5xx, a lost process, a timeout) but not one
it could not take (no server, no free process), is let through, without a
verdict: a theorem whose start always fails, whose tactics always outlast the
read timeout, or a held-out one that always meets a failed call, must not loop
forever.)
"""
from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import zmq

from agents.alphaproof.actors import Backoff
from agents.alphaproof.distributed.sockets import Net, log, receive
from agents.alphaproof.distributed.wire import RESULT, TO_COORDINATOR, Message, WireError, pack, rows_from_arrays
from agents.alphaproof.theorem_source import Task

LOST_RESULT_S = 30.0  # a task its actor stopped listing this long ago: its result was lost, requeue it
SERVER_RETRIES = 3  # a theorem whose search the server stopped this often is let through (no verdict)
RETRY_GAP_S = 5.0  # failures of one theorem closer than this count once (actors sharing a server fail it at once)


@dataclass
class Job:
    id: int
    task: Task
    eval_round: int | None = None  # the held-out evaluation it belongs to; None: training
    actor: str | None = None
    issued: float = 0.0
    unlisted_since: float | None = None
    server_failures: int = 0  # times a Lean server failed its search or start (not: no server, no free process)
    counted_at: float = float("-inf")  # when the last of server_failures was counted
    failed_on: set[str] = field(default_factory=set)  # actors whose Lean server failed it: others search it first

    def wire(self) -> dict[str, Any]:
        thm = self.task.theorem
        return {"id": self.id, "statement": thm.formal_statement, "name": thm.name, "header": thm.header,
                "eval": self.eval_round is not None}


@dataclass
class ActorInfo:
    id: str
    ident: bytes
    searches: int
    pid: int
    host: str
    last_seen: float
    stats: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    backoff: Backoff = field(default_factory=lambda: Backoff(1.0, 30.0))
    paused_until: float = 0.0  # its Lean server failed: no work for it before then
    _prev: tuple[float, dict[str, float]] | None = None

    def update(self, stats: dict[str, Any], now: float) -> None:
        clean = {k: float(v) for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self._prev is not None and now - self._prev[0] >= 1.0:
            dt, before = now - self._prev[0], self._prev[1]
            d = {k: clean.get(k, 0.0) - before.get(k, 0.0) for k in ("searches", "lean_calls", "lean_s")}
            self.rates = {"searches_per_s": d["searches"] / dt, "lean_calls_per_s": d["lean_calls"] / dt,
                          "lean_latency_ms": 1e3 * d["lean_s"] / d["lean_calls"] if d["lean_calls"] > 0
                          else self.rates.get("lean_latency_ms", 0.0)}
            self._prev = (now, clean)
        elif self._prev is None:
            self._prev = (now, clean)
        self.stats = clean


@dataclass
class Result:
    job: Job
    msg: Message
    rows: list[dict[str, Any]]
    actor: str


class Coordinator:
    def __init__(self, znet: Net, host: str, port: int, config: dict[str, Any], inference: list[str],
                 draw: Callable[[], Task | None], heartbeat_s: float = 1.0, heartbeat_timeout: float = 10.0) -> None:
        self.work, self.port = znet.bind(zmq.ROUTER, host, port)
        self.results, self.results_port = znet.bind(zmq.PULL, host, 0)
        self.results.setsockopt(zmq.RCVHWM, 1000)
        self.config, self.inference, self.draw = config, inference, draw
        self.heartbeat_s, self.heartbeat_timeout = heartbeat_s, heartbeat_timeout
        self.actors: dict[str, ActorInfo] = {}
        self.queue: deque[Job] = deque()  # to hand out first: evaluation tasks, requeued theorems
        self.ids = itertools.count(1)
        self.requeued = 0
        self.joins = 0
        self.dropped_messages = 0
        self.stopping: str | None = None  # set: every actor that asks is told to stop, with this reason
        self.stopping_final = True
        self.wait_s = 0.0  # >0: hand out no training work for now (the learner is behind)
        self.version = 0  # the newest weight version (acknowledged to heartbeats)
        self.status_extra: Callable[[], dict[str, Any]] = dict
        self.poller = zmq.Poller()
        self.poller.register(self.work, zmq.POLLIN)
        self.poller.register(self.results, zmq.POLLIN)

    # ------------------------------------------------------------------ queue
    def add_eval(self, tasks: list[Task], round_: int) -> list[Job]:
        jobs = [Job(next(self.ids), t, round_) for t in tasks]
        self.queue.extendleft(reversed(jobs))
        return jobs

    def held(self) -> int:
        return sum(len(a.jobs) for a in self.actors.values())

    def requeue(self, jobs: list[Job], fault: bool = True) -> None:
        """Back to the front of the queue; ``fault``: counted as requeued theorems."""
        for j in jobs:
            j.actor, j.unlisted_since = None, None
        self.requeued += len(jobs) if fault else 0
        self.queue.extendleft(reversed(jobs))

    def _next_jobs(self, n: int, actor: str) -> list[Job]:
        out, skipped = [], []
        while len(out) < n and self.queue:
            job = self.queue.popleft()
            (skipped if self._elsewhere(job, actor) else out).append(job)
        self.queue.extendleft(reversed(skipped))
        while len(out) < n and self.wait_s <= 0:
            task = self.draw()
            if task is None:
                break
            out.append(Job(next(self.ids), task))
        return out

    def _elsewhere(self, job: Job, actor: str) -> bool:
        """The job failed on this actor's Lean server and another live actor's has not failed it yet."""
        return actor in job.failed_on and any(a not in job.failed_on for a in self.actors)

    # ------------------------------------------------------------------ the loop's step
    def poll(self, timeout_ms: int) -> list[Result]:
        """Handle what arrived within ``timeout_ms``; returns the finished searches."""
        out: list[Result] = []
        events = dict(self.poller.poll(timeout_ms))
        if self.work in events:
            for _ in range(1000):
                if not self.work.poll(0):
                    break
                self._on_work()
        if self.results in events:
            for _ in range(10_000):
                if not self.results.poll(0):
                    break
                r = self._on_result()
                if r is not None:
                    out.append(r)
        self._check_actors()
        return out

    def _reply(self, ident: bytes, t: str, header: dict[str, Any] | None = None) -> None:
        try:
            self.work.send_multipart([ident, *pack(t, header)], flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the actor is gone
        except ValueError as e:  # (a value JSON cannot carry: a bug, but not one to stop the run for)
            log.warning("could not answer %r: %s", t, e)

    def _on_work(self) -> None:
        got = receive(self.work, TO_COORDINATOR, routed=True)
        if got is None:
            self.dropped_messages += 1
            return
        ident, msg = got
        now = time.monotonic()
        if msg.t == "status":
            self._reply(ident, "status", {"table": self.table()})
            return
        if msg.t == "hello":
            self._hello(ident, msg, now)
            return
        actor = self.actors.get(msg["actor"])
        if actor is None:
            self._reply(ident, "stop", self._stop_message()) if self.stopping else self._reply(ident, "who")
            return
        actor.last_seen = now
        if msg.t == "beat":
            actor.update(msg["stats"], now)
            self._reconcile(actor, msg["tasks"], now)
            self._reply(ident, "ack", {"version": self.version})
        elif msg.t == "want":
            if self.stopping:
                self._reply(ident, "stop", self._stop_message())
                return
            actor.ident = ident
            paused = actor.paused_until - now  # (its Lean server failed lately: ask again later)
            jobs = self._next_jobs(max(0, min(msg["n"], 4096)), actor.id) if paused <= 0 else []
            for j in jobs:
                j.actor, j.issued = actor.id, now
                actor.jobs[j.id] = j
            self._reply(ident, "work", {"req": msg["req"], "tasks": [j.wire() for j in jobs],
                                        "wait": 0.0 if jobs else max(0.2, self.wait_s, paused)})
        elif msg.t == "bye":
            self._drop(actor, "said goodbye")

    def _hello(self, ident: bytes, msg: Message, now: float) -> None:
        if self.stopping:
            self._reply(ident, "stop", self._stop_message())
            return
        old = self.actors.get(msg["actor"])
        if old is not None:  # it came back before its heartbeat timed out: what it held is lost
            self._drop(old, "joined again")
        self.actors[msg["actor"]] = ActorInfo(msg["actor"], ident, max(1, msg["searches"]), msg["pid"], msg["host"],
                                              now)
        self.joins += 1
        log.info("actor %s joined (%d searches, %s)", msg["actor"], msg["searches"], msg["host"])
        self._reply(ident, "welcome", {"config": self.config, "inference": self.inference,
                                       "results": self.results_port, "heartbeat_s": self.heartbeat_s,
                                       "heartbeat_timeout_s": self.heartbeat_timeout})

    def _reconcile(self, actor: ActorInfo, listed: list[Any], now: float) -> None:
        """Tasks the actor no longer lists, and whose result has not come for a while, are requeued."""
        have = {t for t in listed if isinstance(t, int)}
        lost = []
        for j in actor.jobs.values():
            if j.id in have or now - j.issued < LOST_RESULT_S:
                j.unlisted_since = None
            elif j.unlisted_since is None:
                j.unlisted_since = now
            elif now - j.unlisted_since > LOST_RESULT_S:
                lost.append(j)
        for j in lost:
            del actor.jobs[j.id]
        if lost:
            self.requeue(lost)

    def _drop(self, actor: ActorInfo, why: str) -> None:
        self.actors.pop(actor.id, None)
        if actor.jobs:
            log.warning("actor %s %s: %d theorems go back to the queue", actor.id, why, len(actor.jobs))
            self.requeue(list(actor.jobs.values()))
        actor.jobs = {}

    def _check_actors(self) -> None:
        now = time.monotonic()
        for actor in [a for a in self.actors.values() if now - a.last_seen > self.heartbeat_timeout]:
            self._drop(actor, f"sent no heartbeat for {self.heartbeat_timeout:g} s")

    def _on_result(self) -> Result | None:
        got = receive(self.results, RESULT)
        if got is None:
            self.dropped_messages += 1
            return None
        msg = got[1]
        actor = self.actors.get(msg["actor"])
        job = actor.jobs.pop(msg["task"], None) if actor else None
        if job is None:  # requeued already (its actor was dropped), or never ours
            return None
        if msg["status"] == "aborted":  # the actor lost the learner mid-search: no verdict, search it again
            self.requeue([job])
            return None
        if msg["status"] == "server_down":
            now = time.monotonic()
            if msg["stop_reason"] is not None and now - job.counted_at >= RETRY_GAP_S:  # (a burst counts once)
                job.server_failures += 1
                job.counted_at = now
            job.failed_on.add(actor.id)
            if now >= actor.paused_until:  # (one backoff step per outage seen, not one per theorem of a burst)
                actor.paused_until = now + actor.backoff.delay()
            if job.server_failures < SERVER_RETRIES:  # no result: searched again (elsewhere, or after the backoff)
                self.requeue([job])
                return None
        elif msg["status"] == "searched":
            actor.backoff.reset()
        try:
            rows = rows_from_arrays(msg, msg["n_rows"])
        except WireError as e:
            log.warning("dropped the rows of a malformed result: %s", e)
            self.dropped_messages += 1
            rows = []
        return Result(job, msg, rows, msg["actor"])

    # ------------------------------------------------------------------ status
    def table(self) -> dict[str, Any]:
        now = time.monotonic()
        actors = [{"actor": a.id, "host": a.host, "searches": a.searches, "held": len(a.jobs),
                   "seen_s_ago": round(now - a.last_seen, 1), "done": a.stats.get("searches", 0),
                   "errors": a.stats.get("errors", 0), **{k: round(v, 2) for k, v in a.rates.items()}}
                  for a in self.actors.values()]
        return {"actors": actors, "queue": len(self.queue), "requeued": self.requeued, "joins": self.joins,
                "dropped_messages": self.dropped_messages, **self.status_extra()}

    def totals(self) -> dict[str, float]:
        rates = [a.rates for a in self.actors.values()]
        return {"live_actors": float(len(self.actors)),
                "searches_per_s": sum(r.get("searches_per_s", 0.0) for r in rates),
                "lean_calls_per_s": sum(r.get("lean_calls_per_s", 0.0) for r in rates)}

    def _stop_message(self) -> dict:
        return {"why": self.stopping, "final": self.stopping_final}

    def stop_all(self, why: str, final: bool = True) -> None:
        """Tell every actor to stop now (and any that asks later); what they hold is not awaited.
        ``final`` False (the learner was interrupted): remote actors wait for it to come back."""
        self.stopping, self.stopping_final = why, final
        for a in list(self.actors.values()):
            self._reply(a.ident, "stop", self._stop_message())
        self.actors.clear()

    def close(self) -> None:
        self.work.close(linger=1000)  # (stop_all's messages still queued go out, within a second)
        self.results.close(linger=0)
