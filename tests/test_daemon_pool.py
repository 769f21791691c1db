"""DaemonPool: results in order, a failing call waits for the running ones, Ctrl-C and exit never wait."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
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
    release, finished = threading.Event(), []

    def call(x):
        if x == "boom":
            raise ValueError("boom")
        release.wait(10)
        finished.append(x)
        return x

    threading.Timer(0.2, release.set).start()
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


def test_threads_of_a_dropped_pool_end():
    import gc

    before = {t.name for t in threading.enumerate()}
    pool = DaemonPool(3, name="dropped-pool")
    assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3]
    del pool
    gc.collect()
    for t in threading.enumerate():
        if t.name.startswith("dropped-pool") and t.name not in before:
            t.join(10)
            assert not t.is_alive()


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
