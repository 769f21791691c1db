"""The distributed run's messages and sockets: the wire format round-trips and refuses what is malformed,
a coordinator and an inference service drop malformed messages and go on serving (real ZeroMQ sockets),
and CurveZMQ keeps out a client without the authorized key."""
from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

from agents.alphaproof.distributed.coordinator import Coordinator
from agents.alphaproof.distributed.inference import InferenceLost, InferenceService, RemoteEvaluator
from agents.alphaproof.distributed.keys import make_keys
from agents.alphaproof.distributed.sockets import Net, parse_bind, receive
from agents.alphaproof.distributed.wire import (RESULT, TO_ACTOR, TO_STATUS, WireError, pack,
                                         rows_from_arrays, rows_to_arrays, unpack)
from agents.alphaproof.interfaces import Evaluation

ROWS = [{"state": "p q : Prop\n⊢ p ∧ q", "tactic": "constructor", "steps_to_go": 2, "rejected": ["left", "exact h"]},
        {"state": "⊢ False", "steps_to_go": None}, {"state": "", "tactic": "", "steps_to_go": 0},
        {"state": "⊢ q", "rejected": ["assumption"]}]  # (no value target: it stays without one)


def result_frames(**overrides):
    header = {"actor": "a", "task": 1, "status": "searched", "verified": True, "verdict": True,
              "rate_verdict": True, "stop_reason": "solved", "simulations": 3, "lean_calls": 4, "wall_s": 0.5,
              "version": 2, "n_rows": len(ROWS), "error": None, "proof": "constructor <;> assumption", **overrides}
    return pack("result", header, rows_to_arrays(ROWS))


def test_rows_round_trip_through_the_wire_format():
    msg = unpack([bytes(f) for f in result_frames()], RESULT)
    assert msg.t == "result" and msg["version"] == 2 and msg["stop_reason"] == "solved"
    assert rows_from_arrays(msg, len(ROWS)) == ROWS  # (a row without a tactic comes back without one)


@pytest.mark.parametrize("frames, why", [
    ([], "empty"),
    ([b"NOPE", b"{}"], "not a leangym message"),
    ([b"LGAP1", b"\xff\xfe"], "not UTF-8 JSON"),
    ([b"LGAP1", b"[1, 2]"], "string 't'"),
    ([b"LGAP1", pickle.dumps({"t": "result"})], "not UTF-8 JSON"),  # pickle bytes are never loaded
    ([b"LGAP1", b'{"t": "shutdown", "arrays": []}'], "unexpected message type"),
    ([b"LGAP1", b'{"t": "result", "arrays": []}'], "field 'actor'"),
    ([b"LGAP1", b"[" * 100_000 + b"]" * 100_000], "nested too deeply"),  # (json.loads: RecursionError)
    ([b"LGAP1", b'{"t": "beat", "stats": {"searches": NaN}}'], "not a number"),
    ([b"LGAP1", b'{"t": "beat", "stats": {"searches": 1e400}}'], "not finite"),
    ([b"LGAP1", b'{"t": "beat", "stats": {"searches": 1' + b"0" * 400 + b'}}'], "out of range"),
])
def test_malformed_frames_are_refused_with_a_reason(frames, why):
    with pytest.raises(WireError, match=why):
        unpack(frames, RESULT)


def test_malformed_fields_and_arrays_are_refused():
    good = [bytes(f) for f in result_frames()]
    with pytest.raises(WireError, match="must be int"):
        unpack([bytes(f) for f in result_frames(task="1")], RESULT)
    with pytest.raises(WireError, match="must be int"):
        unpack([bytes(f) for f in result_frames(task=True)], RESULT)  # a bool is not a number here
    with pytest.raises(WireError, match="describe"):
        unpack(good[:-1], RESULT)  # an array frame missing
    with pytest.raises(WireError, match="bytes"):
        unpack(good[:2] + [good[2][:-1]] + good[3:], RESULT)  # a truncated array
    msg = unpack(good, RESULT)
    msg.arrays["state_off"] = np.array([0, 50, 10, 20], dtype=np.int32)  # offsets out of order
    with pytest.raises(WireError, match="offsets"):
        rows_from_arrays(msg, len(ROWS))
    with pytest.raises(WireError, match="5 entries for 2 strings"):
        rows_from_arrays(unpack(good, RESULT), 2)


def test_parse_bind_and_a_port_that_is_taken():
    assert parse_bind("127.0.0.1") == ("127.0.0.1", 0) and parse_bind("0.0.0.0:5555") == ("0.0.0.0", 5555)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_bind("host:port")
    znet = Net()
    try:
        _, port = znet.bind(zmq.PULL, "127.0.0.1", 0)
        with pytest.raises(ValueError, match=f"--bind 127.0.0.1:{port}: .*another process's"):
            znet.bind(zmq.PULL, "127.0.0.1", port)
    finally:
        znet.close()


def _ask_status(znet: Net, endpoint: str, coord: Coordinator) -> dict:
    sock = znet.connect(zmq.DEALER, endpoint)
    sock.send_multipart(pack("status"))
    for _ in range(100):  # the coordinator answers from its own poll (this thread)
        coord.poll(20)
        if sock.poll(0):
            break
    got = receive(sock, TO_STATUS)
    sock.close()
    assert got is not None
    return got[1]["table"]


def test_coordinator_drops_malformed_messages_and_keeps_serving():
    znet = Net()
    coord = Coordinator(znet, "127.0.0.1", 0, {"env": "PropLogic-v0"}, ["tcp://*:1"], draw=lambda: None)
    try:
        endpoint = f"tcp://127.0.0.1:{coord.port}"
        bad = znet.connect(zmq.DEALER, endpoint)
        for frames in ([b"garbage"], [b"LGAP1", b"{not json"], [b"LGAP1", pickle.dumps(object)],
                       pack("hello", {"actor": 7, "searches": 1, "pid": 1, "host": "h"}),  # actor must be a string
                       [b"LGAP1", b'{"t": "want", "actor": "x", "n": 1, "req": 1, "arrays": [["a", "u1", 9]]}'],
                       [b"LGAP1", b"[" * 100_000 + b"]" * 100_000],  # what json.loads cannot take: dropped too
                       [b"LGAP1", b'{"t": "beat", "actor": "x", "tasks": [], "stats": {"searches": 1' + b"0" * 400
                        + b"}, \"arrays\": []}"]):
            bad.send_multipart(frames)
        push = znet.connect(zmq.PUSH, f"tcp://127.0.0.1:{coord.results_port}")
        push.send_multipart([b"LGAP1", b'{"t": "result"}'])
        push.send_multipart([b"LGAP1", b"[" * 100_000 + b"]" * 100_000])
        push.send_multipart(result_frames(task=99))  # well formed, but for a task nobody holds: ignored
        push.send_multipart(result_frames(simulations=10 ** 30))  # a count no float holds exactly
        table = None
        for _ in range(50):
            table = _ask_status(znet, endpoint, coord)
            if table["dropped_messages"] >= 10:
                break
        assert table["dropped_messages"] == 10 and table["actors"] == []
        # a well-formed actor is still welcomed
        good = znet.connect(zmq.DEALER, endpoint)
        good.send_multipart(pack("hello", {"actor": "a1", "searches": 2, "pid": 1, "host": "h"}))
        for _ in range(100):
            coord.poll(20)
            if good.poll(0):
                break
        got = receive(good, TO_ACTOR)
        assert got is not None and got[1].t == "welcome" and got[1]["results"] == coord.results_port
        for s in (bad, push, good):
            s.close()
    finally:
        coord.close()
        znet.close()


class EchoNet:
    """A stand-in network for the inference service: one tactic per state, its length as the value."""

    def __init__(self):
        self.batches = []

    def evaluate(self, states, k):
        self.batches.append(len(states))
        return [Evaluation(tuple(f"t{i}" for i in range(kk)), tuple(-float(i) for i in range(kk)), 0.5)
                for kk in (k if isinstance(k, list) else [k] * len(states))]


def test_inference_service_drops_malformed_requests_and_answers_the_rest():
    znet = Net()
    net = EchoNet()
    svc = InferenceService(net, znet, max_batch=8, max_wait_s=0.01).start()
    try:
        bad = znet.connect(zmq.DEALER, f"tcp://127.0.0.1:{svc.port}")
        bad.send_multipart([b"LGAP1", b'{"t": "eval", "id": 1, "n": 2, "arrays": []}'])
        bad.send_multipart(pack("eval", {"id": 2, "n": 5}, {"state": np.zeros(3, np.uint8),
                                                           "state_off": np.array([0, 3], np.int32),
                                                           "k": np.array([1], np.int32)}))  # n disagrees
        ev = RemoteEvaluator(znet, [f"tcp://127.0.0.1:{svc.port}"], timeout_s=30)
        out = ev.evaluate(["⊢ p", "⊢ q → q"], [1, 3])
        assert [e.tactics for e in out] == [("t0",), ("t0", "t1", "t2")] and out[1].log_priors[2] == -2.0
        assert ev.versions == [0] and not bad.poll(200)  # the malformed requests got no answer
        ev.close()
        bad.close()
    finally:
        svc.stop()
        znet.close()


def test_requests_that_come_during_a_forward_pass_share_the_next_one_without_a_deadline():
    class GatedNet(EchoNet):  # the first forward pass holds until the test lets it go
        def __init__(self):
            super().__init__()
            self.entered, self.go = threading.Event(), threading.Event()

        def evaluate(self, states, k):
            self.entered.set()
            self.go.wait(30)
            return super().evaluate(states, k)

    znet, net = Net(), GatedNet()
    svc = InferenceService(net, znet, max_batch=64, max_wait_s=0.0).start()  # --infer-wait-ms 0
    evs = [RemoteEvaluator(znet, [f"tcp://127.0.0.1:{svc.port}"], timeout_s=30) for _ in range(3)]
    answers = {}
    ask = (lambda i, states: answers.setdefault(i, evs[i].evaluate(states, 1)))
    try:
        first = threading.Thread(target=ask, args=(0, ["⊢ p"]))
        first.start()
        assert net.entered.wait(30)  # actor 0 alone: answered at once, no deadline to wait for
        later = [threading.Thread(target=ask, args=(i, ["⊢ q", "⊢ r"])) for i in (1, 2)]
        for t in later:
            t.start()
        time.sleep(0.5)  # (both requests reach the service's socket while its forward pass runs)
        net.go.set()
        for t in [first, *later]:
            t.join(30)
        assert net.batches == [1, 4] and sorted(len(a) for a in answers.values()) == [1, 2, 2]
    finally:
        net.go.set()
        for ev in evs:
            ev.close()
        svc.stop()
        znet.close()


def test_an_inference_service_that_fails_stops_the_run_with_why_instead_of_timeouts():
    class OutOfMemory(EchoNet):
        def evaluate(self, states, k):
            raise MemoryError("CUDA out of memory")

    znet = Net()
    svc = InferenceService(OutOfMemory(), znet, max_batch=8, max_wait_s=0.01).start()
    try:
        ev = RemoteEvaluator(znet, [f"tcp://127.0.0.1:{svc.port}"], timeout_s=2)
        with pytest.raises(InferenceLost):
            ev.evaluate(["⊢ p"], 1)
        ev.close()
        with pytest.raises(RuntimeError, match="inference service stopped: MemoryError: CUDA out of memory .*--infer-batch"):
            svc.raise_if_failed()
    finally:
        svc.stop()
        znet.close()


def _handshake_events(client: zmq.Socket, timeout_s: float = 20.0) -> set[int]:
    """Events of ``client``'s monitor until a handshake succeeds or fails."""
    mon = client.get_monitor_socket()
    from zmq.utils.monitor import recv_monitor_message

    seen, end = set(), time.monotonic() + timeout_s
    done = {zmq.EVENT_HANDSHAKE_SUCCEEDED, zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
            zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL}
    while time.monotonic() < end and not seen & done:
        if mon.poll(200):
            seen.add(recv_monitor_message(mon)["event"])
    client.disable_monitor()
    mon.close()
    return seen


def test_an_actor_with_other_keys_says_so_and_gives_up_with_exit_status_1(tmp_path):
    make_keys(tmp_path / "keys")
    make_keys(tmp_path / "other")
    server = Net(str(tmp_path / "keys"), server=True)
    coord = Coordinator(server, "127.0.0.1", 0, {}, ["tcp://*:1"], draw=lambda: None)
    try:
        actor = subprocess.Popen([sys.executable, "-m", "agents.alphaproof.actor", "--connect",
                                  f"tcp://127.0.0.1:{coord.port}", "--keys", str(tmp_path / "other"),
                                  "--join-timeout", "4", "--actors", "1"], stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 120
        while actor.poll() is None and time.monotonic() < end:
            coord.poll(50)
        err = actor.communicate(timeout=10)[1]
        assert actor.returncode == 1, err
        assert "refused this actor's security handshake: both need the same --keys" in err
        assert "stopping: no learner answered" in err and not coord.actors
    finally:
        coord.close()
        server.close()


def test_curve_refuses_a_client_without_the_authorized_key(tmp_path, caplog):
    subprocess.run([sys.executable, "-m", "agents.alphaproof.keys", str(tmp_path / "keys")], check=True,
                   capture_output=True)
    make_keys(tmp_path / "other")
    assert (tmp_path / "keys" / "authorized" / "client.key").is_file()
    with pytest.raises(ValueError, match="already holds keys"):
        make_keys(tmp_path / "keys")
    server = Net(str(tmp_path / "keys"), server=True)
    coord = Coordinator(server, "127.0.0.1", 0, {}, ["tcp://*:1"], draw=lambda: None)
    endpoint = f"tcp://127.0.0.1:{coord.port}"
    # an intruder who knows the server's public key but holds another client key pair
    (tmp_path / "other" / "server.key").write_bytes((tmp_path / "keys" / "server.key").read_bytes())
    intruder, member = Net(str(tmp_path / "other")), Net(str(tmp_path / "keys"))
    try:
        for znet, ok in ((intruder, False), (member, True)):
            sock = znet.socket(zmq.DEALER, server=False)
            events = []
            t = threading.Thread(target=lambda: events.append(_handshake_events(sock)))
            t.start()
            time.sleep(0.2)  # (the monitor is attached before the connection starts)
            sock.connect(endpoint)
            sock.send_multipart(pack("hello", {"actor": "x" if ok else "intruder", "searches": 1, "pid": 1,
                                               "host": "h"}))
            while t.is_alive():
                coord.poll(50)
            t.join()
            assert (zmq.EVENT_HANDSHAKE_SUCCEEDED in events[0]) is ok, events
            if ok:
                for _ in range(100):
                    coord.poll(20)
                    if sock.poll(0):
                        break
                got = receive(sock, TO_ACTOR)
                assert got is not None and got[1].t == "welcome"
            sock.close()
        assert set(coord.actors) == {"x"}  # the intruder never reached the coordinator
        assert "refused a connection whose client key is not in" in caplog.text  # (the learner says so)
    finally:
        coord.close()
        for n in (intruder, member, server):
            n.close()
    with pytest.raises(ValueError, match="client.key_secret"):
        Net(str(tmp_path / "nowhere")).socket(zmq.DEALER, server=False)



def test_status_table_renders_actors_inference_and_learner():
    from agents.alphaproof.status import render

    text = render({"actors": [{"actor": "local0", "host": "n1", "searches": 8, "held": 3, "searches_per_s": 2.5,
                               "lean_calls_per_s": 40.0, "lean_latency_ms": 51.2, "errors": 0, "seen_s_ago": 0.4}],
                   "queue": 2, "requeued": 1, "joins": 3, "dropped_messages": 0,
                   "inference": {"batch_mean": 12.0, "fill": 0.75, "queue": 1, "queue_wait_ms": 3.0, "version": 9},
                   "learner": {"iteration": 4, "steps": 32, "rows_per_s": 20.0, "replay": 800, "replay_ratio": 1.5,
                               "version": 32}})
    lines = text.splitlines()
    assert lines[0].split() == ["actor", "host", "slots", "held", "searches/s", "lean/s", "lean", "ms", "errors",
                                "seen"]
    assert lines[1].split() == ["local0", "n1", "8", "3", "2.5", "40.0", "51.2", "0", "0.4"]
    assert "fill 0.75" in text and "replay 800" in text and "requeued 1" in text
    assert "(no actors connected)" in render({"actors": []})


def test_a_theorem_the_lean_server_failed_is_requeued_not_a_result():
    from agents.alphaproof.theorem_source import Task
    from leangym.theorem import Theorem

    drawn = iter(range(1000))
    def draw() -> Task:
        return Task(Theorem("theorem t (p : Prop) (h : p) : p := by sorry", name=f"t{next(drawn)}"), key="k", level=0)
    znet = Net()
    coord = Coordinator(znet, "127.0.0.1", 0, {}, ["tcp://*:1"], draw=draw)
    endpoint = f"tcp://127.0.0.1:{coord.port}"
    push = znet.connect(zmq.PUSH, f"tcp://127.0.0.1:{coord.results_port}")
    socks = {}

    def ask(actor: str, t: str, header: dict) -> dict:
        sock = socks.get(actor) or socks.setdefault(actor, znet.connect(zmq.DEALER, endpoint))
        sock.send_multipart(pack(t, {"actor": actor, **header}))
        for _ in range(200):
            coord.poll(10)
            if sock.poll(0):
                return receive(sock, TO_ACTOR)[1].header
        raise AssertionError(f"no answer to {t}")

    def results(**header) -> list:
        before = coord.requeued
        push.send_multipart(result_frames(**header))
        for _ in range(100):  # until it is taken in: a result, or a requeue
            got = coord.poll(10)
            if got or coord.requeued > before:
                return got
        return []

    try:
        for a in ("a1", "a2"):
            assert ask(a, "hello", {"searches": 2, "pid": 1, "host": "h"})["t"] == "welcome"
        tasks = ask("a1", "want", {"n": 2, "req": 1})["tasks"]
        assert len(tasks) == 2
        # a1's server could not start the first: no result, back to the queue, a1 paused (it must not spin)
        assert results(actor="a1", task=tasks[0]["id"], status="server_down", stop_reason=None, n_rows=0) == []
        assert coord.requeued == 1 and len(coord.queue) == 1
        again = ask("a1", "want", {"n": 2, "req": 2})
        assert again["tasks"] == [] and again["wait"] >= 0.5
        # after its backoff a1 gets new work, not the theorem its server failed: a2's server has not failed it
        coord.actors["a1"].paused_until = 0.0
        fresh = ask("a1", "want", {"n": 1, "req": 3})["tasks"]
        assert len(fresh) == 1 and fresh[0]["id"] not in {t["id"] for t in tasks}
        assert [j.id for j in coord.queue] == [tasks[0]["id"]]
        # another actor gets the requeued theorem first, and its search is a result
        moved = ask("a2", "want", {"n": 1, "req": 1})["tasks"]
        assert [t["id"] for t in moved] == [tasks[0]["id"]]
        got = results(actor="a2", task=moved[0]["id"])
        assert len(got) == 1 and got[0].job.id == tasks[0]["id"] and coord.requeued == 1
    finally:
        for s in [push, *socks.values()]:
            s.close()
        coord.close()
        znet.close()
