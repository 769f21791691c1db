"""An actor process: batched MCTS over its share of the searches, the network on the learner.

    python -m agents.alphaproof.actor --connect tcp://LEARNER:PORT --actors 64 --server http://LEAN:8000

It says hello to the learner's coordinator, learns the run's search settings
and the inference endpoints, then keeps ``--actors`` searches going: it pulls
theorems for its free slots, runs one search round for all of them (leaf
states to the inference service in ONE request, Lean calls concurrently), and
streams every finished search (training rows, verdict, stats) back. A slot
is refilled as soon as its search ends (it holds a quarter more theorems than slots). Heartbeats (a thread) tell the
coordinator which theorems it holds. When the learner goes away the actor
gives its Lean processes back and says hello again until one answers.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import zmq

from agents.alphaproof.actors import close_sessions, eval_search_config, open_sessions, process_factory, search_config
from agents.alphaproof.distributed.inference import InferenceLost, RemoteEvaluator
from agents.alphaproof.distributed.sockets import Net, host_of, log, receive
from agents.alphaproof.distributed.wire import TO_ACTOR, pack, rows_to_arrays
from agents.alphaproof.iteration import rows_from_result
from agents.alphaproof.search import SERVER_STOPS, _Inline, _Search, gives_verdict, search_round
from agents.alphaproof.theorem_source import Task
from agents.alphaproof.train_args import Args
from leangym.backends.types import NoProcessAvailable, ServerError, ServerTimeout, ServerUnavailable
from leangym.daemon_pool import DaemonPool
from leangym.theorem import Theorem

WANT_TIMEOUT_S = 15.0  # a request for work unanswered this long is asked again
SEARCH_SETTINGS = ("env", "sims", "lean_calls", "eval_lean_calls", "num_tactics", "time_per_theorem", "read_timeout",
                   "factorized", "min_unsolved_visits")


@dataclass
class ActorOptions:
    connect: str  # the learner's work endpoint, tcp://HOST:PORT
    actors: int = 16  # concurrent searches in this process
    server: str | None = None  # LeanTree URL[,URL...]; None: the simulator in-process
    keys: str | None = None
    name: str | None = None
    parent: int | None = None  # a local actor exits when this process (the learner) is gone
    infer_timeout: float = 120.0
    join_timeout: float | None = None  # give up when no learner answers this long (None: never)


class Stopping(Exception):
    """The actor is to exit (the learner said stop, or its parent is gone); ``failed``: with exit status 1."""

    def __init__(self, why: str, failed: bool = False) -> None:
        super().__init__(why)
        self.failed = failed


class LearnerLeft(Exception):
    """The learner stopped without ending the run (Ctrl-C): a remote actor waits for its --resume."""


def _final(msg) -> bool:
    return msg.header.get("final", True) is not False  # (anything but false: the run is over)


def _stop(msg) -> Exception:
    """What a ``stop`` message means here: exit, or (remote, not final) wait for the learner to come back."""
    return Stopping(msg["why"]) if _final(msg) else LearnerLeft(msg["why"])


# CurveZMQ keys that differ (no detail, auth), or keys on one side only (protocol); with no keys here only
# the last is about keys (a peer that closes every connection reads as "no detail" too)
HANDSHAKE_FAILED = {True: zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                    | zmq.EVENT_HANDSHAKE_FAILED_AUTH, False: zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL}


def _start_stop(error: ServerError | None) -> str | None:
    """What a failed start counts as at the coordinator: a server that answered but failed this statement
    (a 5xx, its process lost, no answer in time) stopped its search, and a theorem stopped SERVER_RETRIES
    times is let through (it may always fail there); no server, or no process free, is waited for (None)."""
    if error is None or isinstance(error, (ServerUnavailable, NoProcessAvailable)):
        return None
    return "server_timeout" if isinstance(error, ServerTimeout) else "server_error"


@dataclass
class Slot:
    search: _Search
    task: dict[str, Any]
    version: int  # the weight version when the search started
    oldest: int | None = None  # the oldest weight version that answered its leaves (None: none yet)


# ============================================================================ the link to the coordinator
class Link:
    """The actor's work socket (main thread): hello/welcome, want/work."""

    def __init__(self, znet: Net, opts: ActorOptions, actor_id: str) -> None:
        self.znet, self.opts, self.id = znet, opts, actor_id
        self.sock: zmq.Socket | None = None
        self.reqs = itertools.count(1)
        self.waiting: int | None = None  # id of the want in flight
        self.asked_at = 0.0
        self.not_before = 0.0  # the coordinator said: nothing for now, ask again later

    def _fresh(self) -> zmq.Socket:
        if self.sock is not None:
            self.sock.close(linger=0)
        self.sock = self.znet.connect(zmq.DEALER, self.opts.connect)
        self.waiting = None
        return self.sock

    def join(self, alive: Callable[[], None]) -> dict[str, Any]:
        """Hello until a welcome comes (the learner may be starting, or gone for a while)."""
        started, said, refused = time.monotonic(), False, False
        while True:
            sock = self._fresh()
            monitor = sock.get_monitor_socket(HANDSHAKE_FAILED[self.opts.keys is not None])
            try:
                sock.send_multipart(pack("hello", {"actor": self.id, "searches": self.opts.actors,
                                                   "pid": os.getpid(), "host": socket.gethostname()}))
                deadline = time.monotonic() + 3.0
                while time.monotonic() < deadline:
                    alive()
                    if monitor.poll(0) and not refused:
                        refused = True
                        print(f"[actor {self.id}] the learner at {self.opts.connect} refused this actor's "
                              f"security handshake: both need the same --keys (this actor: "
                              f"{self.opts.keys or 'none'})", file=sys.stderr, flush=True)
                    if sock.poll(200):
                        got = receive(sock, TO_ACTOR)
                        if got is None:
                            continue
                        msg = got[1]
                        if msg.t == "welcome":
                            return msg.header
                        if msg.t == "stop" and (_final(msg) or self.opts.parent is not None):
                            raise Stopping(msg["why"])  # (not final, remote: the learner is going; wait for the next)
            finally:
                sock.disable_monitor()
                monitor.close(linger=0)
            if self.opts.join_timeout is not None and time.monotonic() - started > self.opts.join_timeout:
                raise Stopping(f"no learner answered at {self.opts.connect} for {self.opts.join_timeout:g} s",
                               failed=True)
            if not said:
                print(f"[actor {self.id}] waiting for the learner at {self.opts.connect} ...", file=sys.stderr,
                      flush=True)
                said = True

    def want(self, n: int) -> None:
        if self.waiting is not None and time.monotonic() - self.asked_at > WANT_TIMEOUT_S:
            self.waiting = None  # the answer was lost: ask again (what it held comes back to the queue)
        if self.waiting is None and n > 0 and time.monotonic() >= self.not_before:
            self.waiting = next(self.reqs)
            self.asked_at = time.monotonic()
            self.sock.send_multipart(pack("want", {"actor": self.id, "n": n, "req": self.waiting}))

    def poll(self, timeout_ms: int) -> Any:
        """The coordinator's next answer: a list of tasks, ``"who"``, or None; raises Stopping."""
        if not self.sock.poll(timeout_ms):
            return None
        got = receive(self.sock, TO_ACTOR)
        if got is None:
            return None
        msg = got[1]
        if msg.t == "stop":
            raise _stop(msg)
        if msg.t == "who":
            return "who"
        if msg.t == "work" and msg["req"] == self.waiting:
            self.waiting = None
            if not msg["tasks"]:
                self.not_before = time.monotonic() + min(5.0, max(0.0, msg["wait"]))
            return [t for t in msg["tasks"] if _task_ok(t)]
        return None

    def stop_pending(self) -> None:
        """Raise Stopping if a stop waits unread on the socket (joining again would drop it)."""
        while self.sock is not None and self.sock.poll(0):
            got = receive(self.sock, TO_ACTOR)
            if got is not None and got[1].t == "stop":
                raise _stop(got[1])

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.send_multipart(pack("bye", {"actor": self.id}), flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            self.sock.close(linger=0)


def _task_ok(t: Any) -> bool:
    ok = (isinstance(t, dict) and isinstance(t.get("id"), int) and isinstance(t.get("statement"), str)
          and isinstance(t.get("name"), str) and isinstance(t.get("header"), str) and isinstance(t.get("eval"), bool))
    if not ok:
        log.warning("dropped a malformed task: %s", str(t)[:200])
    return ok


# ============================================================================ heartbeats
class Heartbeat:
    """A thread with its own socket: ``beat`` every ``period`` s with stats and the tasks held.

    ``lost``: no acknowledgement for ``lost_after`` s (the learner is gone); ``unknown``: the
    coordinator does not know this actor (it restarted)."""

    def __init__(self, znet: Net, endpoint: str, actor_id: str, period: float, held: Callable[[], list[int]],
                 stats: dict[str, float], lost_after: float) -> None:
        self.sock = znet.connect(zmq.DEALER, endpoint)
        self.id, self.period, self.held, self.stats, self.lost_after = actor_id, period, held, stats, lost_after
        self.last_ack = time.monotonic()
        self.unknown = False
        self.version = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()

    @property
    def lost(self) -> bool:
        return self.unknown or time.monotonic() - self.last_ack > self.lost_after

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sock.send_multipart(pack("beat", {"actor": self.id, "stats": dict(self.stats),
                                                       "tasks": self.held()}), flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            end = time.monotonic() + self.period
            while not self._stop.is_set() and (left := end - time.monotonic()) > 0:
                if self.sock.poll(int(1e3 * min(left, 0.2))):
                    got = receive(self.sock, TO_ACTOR)
                    if got and got[1].t == "ack":
                        self.last_ack, self.version = time.monotonic(), got[1]["version"]
                    elif got and got[1].t == "who":
                        self.unknown = True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close(linger=0)


# ============================================================================ the actor
class Actor:
    def __init__(self, opts: ActorOptions) -> None:
        self.opts = opts
        self.id = opts.name or f"{socket.gethostname()}-{os.getpid()}"
        self.znet = Net(opts.keys)
        self.link = Link(self.znet, opts, self.id)
        self.stats: dict[str, float] = {"searches": 0, "lean_calls": 0, "lean_s": 0.0, "errors": 0, "active": 0,
                                        "eval_s": 0.0, "started": time.time()}
        self.slots: list[Slot] = []
        self.queued: list[dict[str, Any]] = []  # tasks received ahead of a free slot
        self.prefetch = max(1, opts.actors // 4)

    def alive(self) -> None:
        """Raise Stopping when the learner that started this local actor is gone."""
        if self.opts.parent is not None and os.getppid() != self.opts.parent:
            raise Stopping("the learner that started this actor is gone")

    def run(self) -> int:
        """Join, search, join again, until told to stop; the exit status (1: no learner within --join-timeout)."""
        no_lean = 0  # joins in a row that found no Lean server (it may still be starting: Mathlib takes minutes)
        try:
            while True:
                welcome = self.link.join(self.alive)
                print(f"[actor {self.id}] joined {self.opts.connect}: {self.opts.actors} searches", file=sys.stderr,
                      flush=True)
                try:
                    self.serve(welcome)  # returns when the learner is lost: join again
                    self.link.stop_pending()  # (unless it said stop while a search round waited on inference)
                    print(f"[actor {self.id}] lost the learner; joining again", file=sys.stderr, flush=True)
                except LearnerLeft as e:
                    if self.opts.parent is not None:  # (a local actor goes with its learner)
                        raise Stopping(str(e)) from None
                    print(f"[actor {self.id}] {e}; waiting for it to come back (a --resume of the run)",
                          file=sys.stderr, flush=True)
                except ServerUnavailable as e:  # (before any search: it held no theorem)
                    no_lean += 1
                    wait = min(30.0, 2.0 ** no_lean)
                    print(f"[actor {self.id}] {str(e).splitlines()[0]}; joining again in {wait:g} s", file=sys.stderr,
                          flush=True)
                    self._sleep(wait)
                    continue
                no_lean = 0
        except Stopping as e:
            print(f"[actor {self.id}] stopping: {e}", file=sys.stderr, flush=True)
            return 1 if e.failed else 0
        finally:
            self.link.close()
            self.znet.close()

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.alive()
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))

    def _args(self, config: dict[str, Any], server: str | None, share: int) -> Args:
        settings = {k: config[k] for k in SEARCH_SETTINGS if k in config}
        return dataclasses.replace(Args(), **settings, server=server, actors=share)

    def _process_factory(self, config: dict[str, Any]):
        """A Lean process per search: leases from the servers round robin, or the in-process simulator."""
        urls = [u for u in (self.opts.server or "").split(",") if u]
        if not urls:
            if config.get("env") == "LeanProof-v0":
                raise Stopping("this run proves on a LeanTree server: give the actor --server URL")
            return process_factory(self._args(config, None, self.opts.actors)), False
        shares = [len(range(i, self.opts.actors, len(urls))) for i in range(len(urls))]
        factories = [process_factory(self._args(config, u, max(1, s))) for u, s in zip(urls, shares)]
        turn = itertools.count()
        return (lambda: factories[next(turn) % len(factories)]()), True

    def serve(self, welcome: dict[str, Any]) -> None:
        config = welcome["config"]
        host = host_of(self.opts.connect)
        endpoints = [e.replace("tcp://*:", f"tcp://{host}:") for e in welcome["inference"] if isinstance(e, str)]
        new_process, remote = self._process_factory(config)  # (first: it may find no server, and raise)
        results = self.znet.connect(zmq.PUSH, f"tcp://{host}:{welcome['results']}")
        results.setsockopt(zmq.SNDHWM, 1000)
        results.setsockopt(zmq.SNDTIMEO, 30_000)
        args = self._args(config, self.opts.server, self.opts.actors)
        cfg = {False: search_config(args), True: eval_search_config(args)}  # by task["eval"]
        pool = DaemonPool(self.opts.actors, name="actor-lean") if remote else _Inline()
        self.beat = Heartbeat(self.znet, self.opts.connect, self.id, float(welcome["heartbeat_s"]),
                              lambda: [s.task["id"] for s in list(self.slots)] + [t["id"] for t in list(self.queued)],
                              self.stats,
                              lost_after=_lost_after(welcome))
        evaluator = RemoteEvaluator(self.znet, endpoints, self.opts.infer_timeout,
                                    should_stop=lambda: self.beat.lost or _parent_gone(self.opts.parent))
        try:
            while not self.beat.lost:
                self.alive()
                # ask ahead (a quarter more than the slots): a search that ends is replaced at once
                self.link.want(self.opts.actors + self.prefetch - len(self.slots) - len(self.queued))
                got = self.link.poll(0 if self.slots or self.queued else 200)
                if got == "who":
                    return
                if got:
                    self.queued += got
                free = self.opts.actors - len(self.slots)
                if free > 0 and self.queued:
                    tasks, self.queued = self.queued[:free], self.queued[free:]
                    self.start(tasks, new_process, args, cfg, results, evaluator)
                    self.finish([s for s in self.slots if s.search.stop_reason is not None], pool, results, args)
                if not self.slots:
                    continue
                try:
                    answered = len(evaluator.versions)
                    search_round([s.search for s in self.slots], evaluator, pool)
                    if len(evaluator.versions) > answered:  # (an evaluation must use one weight version)
                        v = min(evaluator.versions[answered:])
                        for s in self.slots:
                            s.oldest = v if s.oldest is None else min(s.oldest, v)
                except InferenceLost:
                    self.abort(results, "the inference service did not answer")
                    return
                except Exception as e:  # noqa: BLE001 -- a poisoned theorem costs this round's searches only
                    self.crash(results, f"{type(e).__name__}: {e}")
                    continue
                self.finish([s for s in self.slots if s.search.stop_reason is not None], pool, results, args)
        finally:
            self.beat.stop()
            close_sessions([s.search.session for s in self.slots], quick=True)
            for t in self.queued:  # never started: searched again elsewhere
                self.send(results, t, "aborted", error="the actor left before starting it")
            self.slots, self.queued = [], []
            pool.close()
            evaluator.close()
            results.close(linger=0)

    # ------------------------------------------------------------------ slots
    def start(self, tasks: list[dict], new_process, args: Args, cfg: dict[bool, Any], results: zmq.Socket,
              evaluator) -> None:
        """Sessions for new tasks (``cfg``: the search, by whether a task is an evaluation's); a task that cannot
        start is reported at once (no verdict)."""
        made, errors, rejected = [], [], []
        for t in tasks:
            try:
                thm = Theorem(t["statement"], name=t["name"], header=t["header"])
            except ValueError as e:
                self.send(results, t, "rejected", error=f"TheoremError: {e}")
                continue
            made.append((Task(thm, key=str(t["id"]), level=0), t))
        server_failed: list[tuple[Task, ServerError]] = []
        kept, sessions, _ = open_sessions([m[0] for m in made], new_process, args, errors, rejected, server_failed)
        by_task = {id(task): t for task, t in made}
        version = evaluator.versions[-1] if evaluator.versions else 0
        for task, session in zip(kept, sessions):
            self.slots.append(Slot(_Search(session, cfg[by_task[id(task)]["eval"]]), by_task[id(task)], version))
        for task, why in rejected:
            self.send(results, by_task[id(task)], "rejected", error=why)
        started = {id(t) for t in kept} | {id(t) for t, _ in rejected}
        server = {id(t): e for t, e in server_failed}
        for task, t in made:
            if id(task) not in started:  # the server failed it: no result, the coordinator requeues it
                self.stats["errors"] += 1
                self.send(results, t, "server_down" if id(task) in server else "failed_start",
                          stop_reason=_start_stop(server.get(id(task))),
                          error=next((e for e in errors if task.theorem.name in e), None))
        for s in self.slots:
            s.search.check_budgets()
        self.stats["active"] = len(self.slots)

    def finish(self, done: list[Slot], pool, results: zmq.Socket, args: Args) -> None:
        if not done:
            return
        finished = pool.map(_Search.finish, [s.search for s in done])
        close_sessions([s.search.session for s in done])
        for slot, r in zip(done, finished):
            self._count(slot)
            # The server hung or vanished under it: no result. A held-out search some of whose calls the
            # server failed has no verdict either: searched again (an evaluation is there for its verdicts).
            # A training one is a result, as in-process: its rows hold (rows_from_result), no verdict.
            failed = r.stop_reason in SERVER_STOPS or (r.server_failures and slot.task["eval"])
            if not r.verified and failed:
                self.stats["errors"] += 1
                self.send(results, slot.task, "server_down", stop_reason=r.stop_reason,
                          error=f"search stopped ({r.stop_reason}); {r.server_failures} Lean calls the server failed")
                continue
            rows = [] if slot.task["eval"] else rows_from_result(r, args.min_unsolved_visits)
            version = slot.version if slot.oldest is None else slot.oldest
            self.send(results, slot.task, "searched", version=version, rows=rows, verified=r.verified,
                      verdict=gives_verdict(r), rate_verdict=gives_verdict(r) and not r.server_failures,
                      stop_reason=r.stop_reason, simulations=r.simulations, lean_calls=r.lean_calls, wall_s=r.wall_s,
                      proof=r.proof if r.verified else None)  # (the learner re-checks it: proof_gate)
        self.slots = [s for s in self.slots if s not in done]
        self.stats["active"] = len(self.slots)

    def _count(self, slot: Slot) -> None:
        st = slot.search.session.stats
        self.stats["searches"] += 1
        self.stats["lean_calls"] += st.lean_calls
        self.stats["lean_s"] += float(sum(st.latencies_s))

    def crash(self, results: zmq.Socket, why: str) -> None:
        """A search round raised: its searches count as unsolved (as a crashed batch does in-process)."""
        print(f"[actor {self.id}] a search round of {len(self.slots)} raised {why}", file=sys.stderr, flush=True)
        self.stats["errors"] += 1
        close_sessions([s.search.session for s in self.slots])
        for s in self.slots:
            self.send(results, s.task, "crashed", rate_verdict=True, error=why)
        self.slots = []

    def abort(self, results: zmq.Socket, why: str) -> None:
        """The learner is gone: give the processes back; the coordinator requeues the theorems."""
        close_sessions([s.search.session for s in self.slots], quick=True)
        for s in self.slots:
            self.send(results, s.task, "aborted", error=why)
        self.slots = []

    def send(self, results: zmq.Socket, task: dict, status: str, *, rows=(), version: int = 0, verified=False,
             verdict=False, rate_verdict=False, stop_reason=None, simulations=0, lean_calls=0, wall_s=0.0,
             error=None, proof=None) -> None:
        header = {"actor": self.id, "task": task["id"], "status": status, "verified": bool(verified),
                  "verdict": bool(verdict), "rate_verdict": bool(rate_verdict), "stop_reason": stop_reason,
                  "simulations": int(simulations), "lean_calls": int(lean_calls), "wall_s": float(wall_s),
                  "version": int(version), "n_rows": len(rows), "error": None if error is None else str(error)[:500],
                  "proof": proof}
        try:
            results.send_multipart(pack("result", header, rows_to_arrays(list(rows))))
        except zmq.Again:  # the learner is not taking results: it will requeue this theorem
            log.warning("a result for task %s could not be sent in 30 s; dropped", task["id"])


def _lost_after(welcome: dict[str, Any]) -> float:
    """Seconds without an acknowledgement before the learner counts as gone: its --heartbeat-timeout (a long
    learning step or checkpoint save holds acknowledgements back as long), at least 5 heartbeats."""
    timeout = welcome.get("heartbeat_timeout_s")
    floor = 5 * float(welcome["heartbeat_s"])
    return max(10.0, floor, float(timeout) if isinstance(timeout, (int, float)) else 0.0)


def _parent_gone(parent: int | None) -> bool:
    return parent is not None and os.getppid() != parent

