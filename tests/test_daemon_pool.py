"""DaemonPool: results in order, a failing call waits for the running ones, Ctrl-C and exit never wait."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from leangym.daemon_pool import DaemonPool

REPO = Path(__file__).resolve().parents[1]


def test_results_come_in_input_order_and_calls_overlap():
    pool = DaemonPool(4)
    barrier = threading.Barrier(4, timeout=10)  # only passes if 4 calls run at once

    def call(x):
        barrier.wait()
        return x * x

    assert pool.map(call, [3, 1, 2, 0]) == [9, 1, 4, 0]
    assert pool.map(lambda x: x + 1, []) == []
    pool.close()


def test_a_failing_call_raises_after_the_running_ones_end():
    pool = DaemonPool(2)
    finished = []

    def call(x):
        if x == "boom":
            raise ValueError("boom")
        # still running well after "boom" has failed: a map that raised at once would see it
        # unfinished. (A wait in the pool's own daemon thread: no timer thread to outlive the test.)
        time.sleep(0.2)
        finished.append(x)
        return x

    with pytest.raises(ValueError, match="boom"):
        pool.map(call, ["slow", "boom"])
    assert finished == ["slow"]  # the running call ended before map raised
    pool.close()


def test_a_closed_pool_refuses_work_instead_of_hanging():
    pool = DaemonPool(1)
    pool.close()
    pool.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        pool.map(str, [1])


def test_no_threads_is_a_clear_error():
    with pytest.raises(ValueError, match="at least one thread"):
        DaemonPool(0)


def test_a_dropped_pool_and_its_owner_are_collected_and_its_threads_end():
    """Idle threads hold neither the pool nor their last call: an owner whose calls capture it
    (a vector env's lambdas capture the env) is collected, and so its pool's threads end."""
    import gc
    import weakref

    class Owner:
        def __init__(self):
            self.pool = DaemonPool(3, name="owned-pool")

        def work(self):
            return self.pool.map(lambda x: (self, x)[1] * 2, [1, 2, 3])

    owner = Owner()
    assert owner.work() == [2, 4, 6]
    threads = [t for t in threading.enumerate() if t.name.startswith("owned-pool")]
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is None
    for t in threads:
        t.join(10)
        assert not t.is_alive()


def test_a_map_from_inside_a_call_runs_inline_instead_of_waiting_for_itself():
    pool = DaemonPool(1)
    assert pool.map(lambda x: pool.map(lambda y: y + x, [10, 20]), [1, 2]) == [[11, 21], [12, 22]]
    pool.close()


def test_of_several_failures_the_first_in_input_order_is_raised():
    pool = DaemonPool(3)
    done = threading.Barrier(3, timeout=10)

    def call(x):
        done.wait()  # all three fail together
        raise ValueError(f"call {x}")

    for _ in range(5):
        with pytest.raises(ValueError, match="call 0"):
            pool.map(call, [0, 1, 2])
    pool.close()


def test_a_vector_env_dropped_without_close_gives_its_leases_back():
    import gc

    from leangym.backends.leantree import live_leases
    from leangym.envs.vector import make_lean_proof_vector
    from leangym.sim.server import start_server

    handle = start_server(max_processes=4)
    try:
        for _ in range(3):  # a third round would find no free process if the first two leaked theirs
            envs = make_lean_proof_vector(2, server=handle.url, reset_attempts=1,
                                          theorem="theorem t (p : Prop) (hp : p) : p := by sorry")
            envs.reset(seed=0)
            envs.step(["exact hp", "skip"])
            del envs
            gc.collect()
            assert live_leases() == []
    finally:
        handle.stop()


def test_ctrl_c_and_exit_do_not_wait_for_a_hung_call():
    """SIGINT while map waits on a call that hangs: KeyboardInterrupt at once, and the
    interpreter exits without joining the hung thread (a ThreadPoolExecutor would)."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        from leangym.daemon_pool import DaemonPool

        def hangs(_):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
            print("the hung call finished", flush=True)

        try:
            DaemonPool(2).map(hangs, [1, 2])
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, cwd=REPO)
    assert proc.returncode == 130 and proc.stdout == "interrupted\n", (proc.stdout, proc.stderr)


def test_settle_waits_for_the_calls_an_interrupted_map_left_running():
    """Ctrl-C during map: the running call goes on; settle() returns only once it has ended, and a
    vector env settles before its next reset/step (a sub-env must not be stepped and reset at once)."""
    import _thread

    pool, finished = DaemonPool(2), threading.Event()

    def call(i):
        if i == 0:
            _thread.interrupt_main()  # Ctrl-C, while call 1 is still running
            return
        time.sleep(0.3)
        finished.set()

    with pytest.raises(KeyboardInterrupt):
        pool.map(call, [0, 1])
    pool.settle()
    assert finished.is_set()
    pool.settle()  # nothing left: returns at once
    assert pool.map(lambda i: i * 2, [1, 2]) == [2, 4]
    pool.close()


def test_a_vector_env_reset_after_an_interrupted_step_waits_for_the_steps_still_running():
    import _thread

    import gymnasium as gym

    from leangym.envs.vector import LeanVectorEnv

    events: list[str] = []

    class Slow(gym.Env):
        observation_space = gym.spaces.Discrete(2)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, i):
            self.i = i

        def reset(self, *, seed=None, options=None):
            events.append(f"reset {self.i}")
            return 0, {}

        def step(self, action):
            if self.i == 0:
                _thread.interrupt_main()
            else:
                time.sleep(0.3)
                events.append("step 1 ended")
            return 0, 0.0, False, False, {}

    envs = LeanVectorEnv([lambda i=i: Slow(i) for i in range(2)])
    envs.reset()
    events.clear()
    with pytest.raises(KeyboardInterrupt):
        envs.step([0, 0])
    envs.reset()
    assert events.index("step 1 ended") < events.index("reset 1"), events
    envs.close()
