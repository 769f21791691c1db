"""The trainer's one gate (agents.alphaproof.proof_gate): a proof counts only once re-checked whole on a fresh
process of the trainer's own. In process, a search result's ``verified`` is decided there; in a distributed run,
an actor's "verified" result is a claim that the learner re-checks (a result forged on the results socket,
real ZeroMQ, earns nothing)."""
from __future__ import annotations

import random
import time
from types import SimpleNamespace

import zmq

from agents.alphaproof.curriculum import Curriculum
from agents.alphaproof.distributed.coordinator import Coordinator
from agents.alphaproof.distributed.learner import EvalRound, Loop, Run
from agents.alphaproof.distributed.sockets import Net, receive
from agents.alphaproof.distributed.wire import TO_ACTOR, pack, rows_to_arrays
from agents.alphaproof.iteration import rows_from_result
from agents.alphaproof.mcts import Target
from agents.alphaproof.proof_gate import confirm
from agents.alphaproof.replay import ReplayBuffer
from agents.alphaproof.search import SearchResult, gives_verdict
from agents.alphaproof.theorem_source import Task
from agents.alphaproof.train_args import Args
from leangym.backends.select import open_backend
from leangym.backends.types import ServerUnavailable
from leangym.theorem import Theorem

THM = Theorem("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry", name="t")
TRUE_PROOF = "exact ⟨hp, hq⟩"
FALSE_PROOF = "exact ⟨hp, hp⟩"  # a proof of p ∧ p: Lean refuses it for p ∧ q
ROWS = [{"state": "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q", "tactic": "exact ⟨hp, hp⟩", "steps_to_go": 1}]


def claimed(proof: str) -> SearchResult:
    target = Target(ROWS[0]["state"], (proof,), (3,), 1, proof)
    return SearchResult("t", True, True, proof, 4, 3, 0.1, "solved", [target])


def test_in_process_a_claimed_proof_counts_only_if_it_holds_on_a_fresh_process():
    sim = open_backend(None)
    errors: list[str] = []
    held, forged, none = confirm([THM] * 3, [claimed(TRUE_PROOF), claimed(FALSE_PROOF), None], sim, errors)
    assert held.verified and rows_from_result(held, 1)  # a true proof: counted, and learned from
    assert not forged.verified and gives_verdict(forged)  # a false one: unsolved ...
    assert rows_from_result(forged, 1) == [] and "re-check" in forged.verify_error  # ... and nothing of its tree
    assert none is None and len(errors) == 1 and "did not hold" in errors[0]

    def down():
        raise ServerUnavailable("nobody answers")
    (cut,) = confirm([THM], [claimed(TRUE_PROOF)], down)
    assert not cut.verified and not gives_verdict(cut)  # no Lean to re-check on: no verdict, not "unsolved"


def _loop(tasks: list[Task]) -> Loop:
    args = Args(actors=4, eval_every=0, progress=False, eval_lean_calls=8)
    run = Run(args, None, None, ReplayBuffer(100), Curriculum([0]), random.Random(0),
              {"iteration": 0, "evals": [], "history": []}, None, [], [], None, lambda: None,
              lambda *a: None, lambda: 0.0, None, open_backend(None))
    loop = Loop(run, SimpleNamespace(version=0), SimpleNamespace(raise_if_failed=lambda: None))
    loop.coord = Coordinator(Net(), "127.0.0.1", 0, {}, ["tcp://*:1"], lambda: tasks.pop() if tasks else None,
                             heartbeat_timeout=600)  # (this test's actor sends no heartbeats)
    return loop


def _take_jobs(loop: Loop, znet: Net, n: int) -> list[int]:
    """An actor says hello and takes ``n`` jobs (real sockets); their ids."""
    actor = znet.connect(zmq.DEALER, f"tcp://127.0.0.1:{loop.coord.port}")
    actor.send_multipart(pack("hello", {"actor": "a", "searches": n, "pid": 1, "host": "h"}))
    actor.send_multipart(pack("want", {"actor": "a", "n": n, "req": 1}))
    jobs: list[int] = []
    for _ in range(300):
        loop.coord.poll(10)
        while actor.poll(0):
            msg = receive(actor, TO_ACTOR)[1]
            jobs += [t["id"] for t in msg["tasks"]] if msg.t == "work" else []
        if len(jobs) == n:
            return jobs
    raise AssertionError(f"got {len(jobs)} of {n} jobs")


def _claim(znet: Net, loop: Loop, claims: list[tuple[int, str, str]]) -> zmq.Socket:
    """Anybody who reaches the results port may send results: (job, status, proof), each claiming a proof.
    Returns the socket: the caller keeps it open until they arrive (it drops what it has not sent when closed)."""
    push = znet.connect(zmq.PUSH, f"tcp://127.0.0.1:{loop.coord.results_port}")
    for job, status, proof in claims:
        header = {"actor": "a", "task": job, "status": status, "verified": True, "verdict": True,
                  "rate_verdict": True, "stop_reason": "solved", "simulations": 1, "lean_calls": 3,
                  "wall_s": 0.1, "version": 0, "n_rows": len(ROWS), "error": None, "proof": proof}
        push.send_multipart(pack("result", header, rows_to_arrays(ROWS)))
    return push


def _until(loop: Loop, done) -> None:
    deadline = time.monotonic() + 30
    while not done() and time.monotonic() < deadline:
        loop.step_once(learn=False)


def test_a_result_forged_on_the_results_socket_earns_nothing_at_the_learner():
    loop, znet = _loop([Task(THM, key="t", level=0) for _ in range(2)]), Net()
    try:
        jobs = _take_jobs(loop, znet, 2)
        push = _claim(znet, loop, [(jobs[0], "searched", TRUE_PROOF), (jobs[1], "searched", FALSE_PROOF)])
        _until(loop, lambda: loop.window.searches >= 2)
        push.close()
        assert sorted(loop.window.judged) == [0, 1]  # the true proof counted, the false one is an unsolved search
        assert loop.unconfirmed == 1 and len(loop.run.replay) == len(ROWS)  # none of the false one's rows
    finally:
        loop.coord.close()
        loop.gate.close()
        znet.close()


def test_a_held_out_round_counts_only_proofs_that_hold_whatever_status_a_result_claims():
    loop, znet = _loop([]), Net()
    try:
        held = loop.coord.add_eval([Task(THM, key=f"h{i}", level=0) for i in range(3)], 0)
        loop.rounds[0] = EvalRound(0, {j.id for j in held}, exclusive=True)
        jobs = _take_jobs(loop, znet, 3)
        push = _claim(znet, loop, [(jobs[0], "searched", TRUE_PROOF), (jobs[1], "crashed", TRUE_PROOF),
                                   (jobs[2], "searched", FALSE_PROOF)])
        _until(loop, lambda: not loop.rounds)
        push.close()
        (ev,) = loop.run.progress["evals"]
        assert ev["evaluated"] == 3 and ev["solve_rate"] == 1 / 3  # a crashed search proves nothing
    finally:
        loop.coord.close()
        loop.gate.close()
        znet.close()


def test_a_result_from_an_older_actor_without_a_proof_field_is_read_not_dropped():
    from agents.alphaproof.distributed.wire import RESULT, unpack

    header = {"actor": "a", "task": 1, "status": "searched", "verified": True, "verdict": True, "rate_verdict": True,
              "stop_reason": "solved", "simulations": 1, "lean_calls": 3, "wall_s": 0.1, "version": 0,
              "n_rows": len(ROWS), "error": None}
    msg = unpack([bytes(f) for f in pack("result", header, rows_to_arrays(ROWS))], RESULT)
    assert msg.header.get("proof") is None  # (no proof to re-check: the learner counts it as unsolved)
