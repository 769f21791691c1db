"""A finished search the Lean server failed, at the coordinator: searched again, or a result with its rows (real sockets)."""
from __future__ import annotations

import dataclasses
from typing import Callable

import pytest
import zmq

from agents.alphaproof.actors import search_config
from agents.alphaproof.distributed.actor import Actor, ActorOptions, Slot
from agents.alphaproof.distributed.coordinator import RETRY_GAP_S, SERVER_RETRIES, Coordinator
from agents.alphaproof.distributed.sockets import Net, receive
from agents.alphaproof.distributed.wire import TO_ACTOR, pack
from agents.alphaproof.interfaces import Evaluation
from agents.alphaproof.iteration import rows_from_result
from agents.alphaproof.search import _Inline, _Search, search_round
from agents.alphaproof.theorem_source import Task
from agents.alphaproof.train_args import Args
from leangym.backends.types import (LeaseLost, NoProcessAvailable, Outcome, ServerError, ServerTimeout,
                                    ServerUnavailable, TacticResult)
from leangym.session import Budget, ProofSession
from leangym.sim.local import LocalProcess
from leangym.theorem import Theorem

STATEMENT = "theorem t (p q : Prop) (h : p) : p := by sorry"


class FlakyProcess(LocalProcess):
    """The simulator, whose server fails the first Lean call (an HTTP 5xx, say) and answers the rest."""

    failed = False

    def apply_tactics(self, state, tactics, timeout_ms=1000):
        if not self.failed:
            self.failed = True
            return [TacticResult(t, Outcome.SERVER_FAILURE, (), "HTTP 502") for t in tactics]
        return super().apply_tactics(state, tactics, timeout_ms)


class Bogus:
    """A policy whose tactics Lean rejects (the search ends unsolved, with rejected-tactic rows)."""

    def evaluate(self, states, k):
        return [Evaluation(("bogus_a", "bogus_b"), (-0.1, -0.2), 0.5) for _ in states]


@dataclasses.dataclass
class Link:
    """A coordinator on real sockets, actor ``a1``'s work socket (``ask``), a results PUSH, an Actor."""
    coord: Coordinator
    ask: Callable[[str, dict], dict]
    push: zmq.Socket
    actor: Actor


@pytest.fixture
def link():
    drawn = iter(range(1000))

    def draw() -> Task:
        return Task(Theorem(STATEMENT, name=f"t{next(drawn)}"), key="k", level=0)

    znet = Net()
    coord = Coordinator(znet, "127.0.0.1", 0, {}, ["tcp://*:1"], draw=draw)
    sock = znet.connect(zmq.DEALER, f"tcp://127.0.0.1:{coord.port}")
    push = znet.connect(zmq.PUSH, f"tcp://127.0.0.1:{coord.results_port}")

    def ask(t: str, header: dict) -> dict:
        sock.send_multipart(pack(t, {"actor": "a1", **header}))
        for _ in range(200):
            coord.poll(10)
            if sock.poll(0):
                return receive(sock, TO_ACTOR)[1].header
        raise AssertionError(f"no answer to {t}")

    actor = Actor(ActorOptions(connect=f"tcp://127.0.0.1:{coord.port}", actors=1, name="a1"))
    yield Link(coord, ask, push, actor)
    for sk in (push, sock):
        sk.close(linger=0)
    coord.close()
    znet.close()


def _unsolved_search_on_a_flaky_server(task: dict, args: Args) -> _Search:
    session = ProofSession(FlakyProcess(), Theorem(task["statement"], name=task["name"]),
                           budget=Budget(max_lean_calls=args.lean_calls))
    search = _Search(session, search_config(args))
    search.check_budgets()
    while search.stop_reason is None:
        search_round([search], Bogus(), _Inline())
    return search


def test_a_training_search_with_one_failed_lean_call_keeps_its_rows_as_in_process(link):
    coord, ask, push, actor = link.coord, link.ask, link.push, link.actor
    assert ask("hello", {"searches": 1, "pid": 1, "host": "h"})["t"] == "welcome"
    [task] = ask("want", {"n": 1, "req": 1})["tasks"]
    assert task["eval"] is False
    args = dataclasses.replace(Args(), lean_calls=8)
    search = _unsolved_search_on_a_flaky_server(task, args)
    # what the in-process loop (train.absorb) adds to the replay buffer from this search
    # (unsolved: finish() has no side effect, the actor calls it again)
    result = search.finish()
    kept_in_process = rows_from_result(result, args.min_unsolved_visits)
    assert kept_in_process and result.server_failures > 0 and not result.solved
    actor.slots = [Slot(search, task, 0)]
    actor.finish(actor.slots, _Inline(), push, args)
    got = []
    for _ in range(100):
        got += coord.poll(10)
        if got or coord.requeued:
            break
    # as in-process: the search's rows (the tactics Lean rejected) are kept, no requeue, no pause
    assert coord.requeued == 0 and len(got) == 1, (coord.requeued, got)
    assert got[0].msg["status"] == "searched" and len(got[0].rows) == len(kept_in_process)
    assert coord.actors["a1"].paused_until == 0.0


def test_a_held_out_search_with_one_failed_lean_call_is_searched_again(link):
    coord, ask, push, actor = link.coord, link.ask, link.push, link.actor
    assert ask("hello", {"searches": 1, "pid": 1, "host": "h"})["t"] == "welcome"
    coord.add_eval([Task(Theorem(STATEMENT, name="held"), key="h", level=0)], 0)
    [task] = ask("want", {"n": 1, "req": 1})["tasks"]
    assert task["eval"] is True
    args = dataclasses.replace(Args(), lean_calls=8)
    search = _unsolved_search_on_a_flaky_server(task, args)
    actor.slots = [Slot(search, task, 0)]
    actor.finish(actor.slots, _Inline(), push, args)
    for _ in range(100):
        assert coord.poll(10) == []
        if coord.requeued:
            break
    assert coord.requeued == 1 and [j.id for j in coord.queue] == [task["id"]]


def failing_start(error: ServerError) -> type:
    """A simulator whose server fails every start of a statement with ``error``."""

    class FailingStart(LocalProcess):
        def start_proof(self, theorem_with_sorry):
            raise error

    return FailingStart


def _start_until_a_result(link: Link, process: type, tries: int, apart: bool = True) -> list:
    """The held-out theorem started on ``process`` up to ``tries`` times, the actor asking after each backoff
    (``apart``: the tries RETRY_GAP_S apart, as a lone actor's backoff spaces them; else a burst)."""
    coord, ask, push, actor = link.coord, link.ask, link.push, link.actor
    args = dataclasses.replace(Args(), lean_calls=8)

    class Versions:
        versions: list[int] = []

    assert ask("hello", {"searches": 1, "pid": 1, "host": "h"})["t"] == "welcome"
    [job] = coord.add_eval([Task(Theorem(STATEMENT, name="held"), key="h", level=0)], 0)
    coord.draw = lambda: None  # (an exclusive evaluation: no training work meanwhile)
    got = []
    for req in range(1, tries + 1):
        coord.actors["a1"].paused_until = 0.0
        if apart:  # (the clock moved on: no sleeping in a test)
            job.counted_at -= RETRY_GAP_S
        tasks = ask("want", {"n": 1, "req": req})["tasks"]
        if not tasks:
            break
        assert [t["id"] for t in tasks] == [job.id]
        before = coord.requeued
        actor.start(tasks, process, args, search_config(args), push, Versions())
        for _ in range(100):
            got += coord.poll(10)
            if got or coord.requeued > before:
                break
        if got:
            break
    assert all(r.job.id == job.id for r in got)
    return got


@pytest.mark.parametrize("error", [ServerTimeout("no answer within --read-timeout 1 s"),
                                   ServerError("HTTP 500 from /start"), LeaseLost("the process crashed")],
                         ids=["timeout", "http_500", "process_lost"])
def test_a_held_out_theorem_whose_start_always_fails_does_not_hold_the_evaluation_for_ever(link, error):
    got = _start_until_a_result(link, failing_start(error), 3 * SERVER_RETRIES)
    # the evaluation ends (without a verdict for it), as for a search a failing server stopped
    # SERVER_RETRIES times; it is not searched again for ever
    assert len(got) == 1 and got[0].msg["status"] == "server_down", (link.coord.requeued, got)
    assert link.coord.requeued == SERVER_RETRIES - 1 and got[0].job.server_failures == SERVER_RETRIES


def test_a_burst_of_failed_starts_counts_once(link):
    """Actors sharing one server fail a theorem within milliseconds: that is one failure, not SERVER_RETRIES."""
    got = _start_until_a_result(link, failing_start(ServerError("HTTP 502")), 3 * SERVER_RETRIES, apart=False)
    [job] = link.coord.queue
    assert got == [] and job.server_failures == 1 and link.coord.requeued == 3 * SERVER_RETRIES


@pytest.mark.parametrize("error", [ServerUnavailable("connection refused"), NoProcessAvailable("all leased")],
                         ids=["no_server", "no_process"])
def test_no_server_or_no_free_process_at_start_is_waited_for(link, error):
    assert _start_until_a_result(link, failing_start(error), 3 * SERVER_RETRIES) == []
    [job] = link.coord.queue  # still to be searched: never counted towards SERVER_RETRIES
    assert link.coord.requeued == 3 * SERVER_RETRIES and job.server_failures == 0
