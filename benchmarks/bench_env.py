"""Overhead of the LeanProof-v0 env over raw HTTP, and the vector env's concurrency.

    python benchmarks/bench_env.py            # ~1 minute on 2 cores

Prints, each ratio measured within this one run against simulated LeanTree
servers started as subprocesses (``python -m leangym.sim.server``):

1. ``env.step`` time / raw HTTP round trip of the SAME ``try_apply_tactic``
   request (same server, same process, same proof state) sent with
   ``requests`` on a keep-alive session (the strict baseline; a bare
   ``requests.post``, which opens a new connection per call, is printed too).
   The tactic is rejected by Lean, so the state and the request never change.
   Goal: <= 1.10.
2. Vector env throughput at 16 envs against a server that adds 50 ms to every
   Lean call, divided by the ideal (16 envs x 1 step per 50 ms). Goal: >= 0.90.
   Printed next to it, measured in alternating blocks: the same requests sent
   by plain ``http.client`` threads, the floor of any threaded Python client
   against this server on this machine.
3. The cost of isolation (issue 24): a proved episode's final check runs on a
   fresh lease (the episode's process goes back, rolled back by the server, and
   a new one is leased). Time per proved episode through the env, divided by the
   same calls with the check on the episode's own lease (a ProofSession and
   ``soundness.verify`` on one kept lease), in alternating blocks. With real
   LeanTree add the server's rollback of the returned process (its
   ``/process/{pid}/return``), which the simulator does at once.
   Then the cost of the final check's tactic-mode pass (the whole proof through
   ``try_apply_tactic`` on a proof start of its own, before the command): the
   kept-lease episode with ``soundness.verify`` / the same episode with the
   command alone, as the check was sent before that pass existed.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import requests
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import leangym  # noqa: E402,F401  (registers the ids)

THEOREM = "theorem bench (p q r : Prop) (hp : p) (hq : q) (hpq : p → r) : (p ∧ q) ∧ r := by sorry"
TACTIC = "exact foo"  # rejected: the state (and so the request) stays the same


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m leangym.sim.server`` in a subprocess (its own interpreter, as in real use)."""

    def __init__(self, *args: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "leangym.sim.server", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     cwd=Path(__file__).resolve().parent.parent)
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(self.url + "/status", timeout=1)
                return
            except requests.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {self.proc.stderr.read().decode()}")
                time.sleep(0.05)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def bench_step_overhead(n: int) -> dict[str, float]:
    """Median seconds per call: env.step, the gated env.process.apply_tactic, keep-alive raw, bare requests.post."""
    with Server("--max-processes", "2") as srv:
        env = gym.make("LeanProof-v0", theorem=THEOREM, server=srv.url, max_episode_steps=10**9)
        env.reset(seed=0)
        u = env.unwrapped
        url = f"{srv.url}/process/{u.process.process_id}/proof/{u.state.proof_state_id}/try_apply_tactic"
        body = {"tactic": TACTIC, "timeout": u.tactic_timeout_ms}
        raw = requests.Session()
        raw.trust_env = False

        def raw_call() -> None:
            reply = raw.post(url, json=body, timeout=30).json()
            assert "error" in reply, reply

        def env_call() -> None:
            _, _, terminated, truncated, info = env.step(TACTIC)
            assert info["outcome"] == "rejected" and not (terminated or truncated), info

        def lease_call() -> None:
            assert u.process.apply_tactic(u.state, TACTIC, u.tactic_timeout_ms).error

        def bare_call() -> None:
            requests.post(url, json=body, timeout=30).json()

        for _ in range(50):  # warm up both paths
            raw_call()
            env_call()
        times: dict[str, list[float]] = {"env": [], "raw": [], "lease": []}
        calls = {"env": env_call, "raw": raw_call, "lease": lease_call}
        block = 50  # interleave blocks so that drift (other load on the machine) hits all alike
        for _ in tqdm(range(n // block), desc="env.step vs raw HTTP", unit="block", leave=False):
            for name, fn in calls.items():
                out = times[name]
                for _ in range(block):
                    t0 = time.perf_counter()
                    fn()
                    out.append(time.perf_counter() - t0)
        t_bare = []
        for _ in range(min(n, 300)):
            t0 = time.perf_counter()
            bare_call()
            t_bare.append(time.perf_counter() - t0)
        env.close()
        return {**{k: statistics.median(v) for k, v in times.items()}, "bare": statistics.median(t_bare)}


def bench_vector(num_envs: int, latency_ms: float, steps: int) -> dict[str, float]:
    """Vector-env steps per second, the ideal, client CPU per vector step, and the floor.

    The floor: the same ``num_envs`` requests per step sent by a pool of plain
    ``http.client`` threads (one keep-alive connection each, no env, no
    ``requests``) to the same server and proof states: what any threaded Python
    client gets on this machine. Env and floor run in alternating blocks, so that
    drift in the machine's speed hits both alike.
    """
    with Server("--max-processes", str(num_envs), "--latency-ms", str(latency_ms)) as srv:
        envs = gym.make_vec("LeanProof-v0", num_envs=num_envs, theorem=THEOREM, server=srv.url,
                            max_episode_steps=10**9)
        envs.reset(seed=0)
        actions = [TACTIC] * num_envs
        subs = [e.unwrapped for e in envs.envs]
        paths = [f"/process/{u.process.process_id}/proof/{u.state.proof_state_id}/try_apply_tactic" for u in subs]
        body = json.dumps({"tactic": TACTIC, "timeout": subs[0].tactic_timeout_ms}).encode()
        conns = [http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30) for _ in paths]

        def raw_call(i: int) -> None:
            conns[i].request("POST", paths[i], body, {"Content-Type": "application/json"})
            assert "error" in json.loads(conns[i].getresponse().read())

        def env_step() -> None:
            _, _, term, trunc, _ = envs.step(actions)
            assert not (term.any() or trunc.any())

        with ThreadPoolExecutor(num_envs) as pool:
            def raw_step() -> None:
                list(pool.map(raw_call, range(num_envs)))

            for _ in range(3):
                env_step()
                raw_step()
            elapsed = {"env": 0.0, "floor": 0.0}
            cpu, block = 0.0, 10
            for _ in tqdm(range(max(1, steps // block)), desc=f"vector env, {num_envs} envs", unit="block",
                          leave=False):
                for name, fn in (("env", env_step), ("floor", raw_step)):
                    t0, cpu0 = time.perf_counter(), time.process_time()
                    for _ in range(block):
                        fn()
                    elapsed[name] += time.perf_counter() - t0
                    if name == "env":
                        cpu += time.process_time() - cpu0
        for c in conns:
            c.close()
        envs.close()
    done = max(1, steps // block) * block
    return {"env": done * num_envs / elapsed["env"], "floor": done * num_envs / elapsed["floor"],
            "ideal": num_envs / (latency_ms / 1000.0), "cpu": cpu / done}


PROOF = "constructor\n· exact ⟨hp, hq⟩\n· exact hpq hp"


def bench_isolation(episodes: int) -> dict[str, float]:
    """Median seconds per proved episode: the env (check on a fresh lease) vs the check on the kept lease."""
    from leangym.backends.leantree import LeanTreeClient
    from leangym.session import ProofSession
    from leangym.soundness import SoundnessPolicy, _command_check, verify
    from leangym.theorem import Theorem

    with Server("--max-processes", "2") as srv:
        env = gym.make("LeanProof-v0", theorem=THEOREM, server=srv.url, max_episode_steps=10**9)
        client = LeanTreeClient(srv.url)
        kept, theorem, policy = client.lease(), Theorem(THEOREM), SoundnessPolicy()

        def fresh() -> None:  # the env: reset, one step that closes the goals, the check on a fresh lease
            env.reset(seed=0)
            _, reward, *_ = env.step(PROOF)
            assert reward == 1.0

        def same() -> None:  # the same calls with the check on the episode's own (kept) lease
            s = ProofSession(kept, theorem)
            assert s.apply(s.root, PROOF).ok and verify(kept, theorem, PROOF, policy).ok

        def command_only() -> None:  # as same(), the check without its tactic-mode pass (not sound: measured only)
            s = ProofSession(kept, theorem)
            assert s.apply(s.root, PROOF).ok and _command_check(kept, theorem, PROOF, policy).ok

        for _ in range(10):
            fresh()
            same()
            command_only()
        times: dict[str, list[float]] = {"fresh": [], "same": [], "command_only": []}
        block = 10
        for _ in tqdm(range(max(1, episodes // block)), desc="isolation", unit="block", leave=False):
            for name, fn in (("fresh", fresh), ("same", same), ("command_only", command_only)):
                for _ in range(block):
                    t0 = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t0)
        kept.close()
        env.close()
        client.close()
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    from leangym.cli import ArgumentParser

    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3000, help="env.step / raw calls each for (1)")
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--vec-steps", type=int, default=100, help="vector steps for (2)")
    ap.add_argument("--isolation-episodes", type=int, default=300, help="proved episodes each for (3)")
    ap.add_argument("--only-isolation", action="store_true", help="run (3) alone")
    args = ap.parse_args(argv)
    if args.only_isolation:
        return _print_isolation(args.isolation_episodes)

    t = bench_step_overhead(args.steps)
    ratio1 = t["env"] / t["raw"]
    print(f"(1) env.step {t['env'] * 1e3:.3f} ms / the same request through requests.Session.post (keep-alive) "
          f"{t['raw'] * 1e3:.3f} ms = {ratio1:.3f}  (goal <= 1.10: {'OK' if ratio1 <= 1.10 else 'MISSED'}; below 1: "
          "leangym's own HTTP transport is faster than requests')")
    print(f"    env.process.apply_tactic (the gate, no env.step) {t['lease'] * 1e3:.3f} ms ({t['lease'] / t['raw']:.3f} x raw); "
          f"bare requests.post (new connection per call) {t['bare'] * 1e3:.3f} ms")

    v = bench_vector(args.num_envs, args.latency_ms, args.vec_steps)
    ratio2, floor = v["env"] / v["ideal"], v["floor"] / v["ideal"]
    print(f"(2) vector env, {args.num_envs} envs, {args.latency_ms:g} ms latency: {v['env']:.1f} steps/s / "
          f"ideal {v['ideal']:.1f} steps/s = {ratio2:.3f}  (goal >= 0.90: {'OK' if ratio2 >= 0.90 else 'MISSED'})")
    print(f"    floor: plain http.client threads, same requests and server: {v['floor']:.1f} steps/s = "
          f"{floor:.3f} of ideal; the vector env gets {v['env'] / v['floor']:.3f} of it")
    print(f"    client CPU per vector step {v['cpu'] * 1e3:.1f} ms ({v['cpu'] / args.num_envs * 1e3:.2f} ms per env step)")
    _print_isolation(args.isolation_episodes)
    return 0


def _print_isolation(episodes: int) -> int:
    i = bench_isolation(episodes)
    print(f"(3) isolation: a proved episode with its final check on a fresh lease {i['fresh'] * 1e3:.2f} ms / the same "
          f"calls with the check on the kept lease {i['same'] * 1e3:.2f} ms = {i['fresh'] / i['same']:.2f}x "
          f"(+{(i['fresh'] - i['same']) * 1e3:.2f} ms per proved episode: one /return and one /process/get; "
          "real LeanTree adds its rollback of the returned process)")
    print(f"    tactic-mode pass of the final check: the kept-lease episode {i['same'] * 1e3:.2f} ms / the same with the "
          f"command alone {i['command_only'] * 1e3:.2f} ms = {i['same'] / i['command_only']:.2f}x "
          f"(+{(i['same'] - i['command_only']) * 1e3:.2f} ms per check: one proof start and one try_apply_tactic)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"    ({os.cpu_count()} CPUs, load average {load:.1f}, python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    from leangym.cli import run_cli

    run_cli(main)
