"""Local actor processes of a learner: started, restarted with backoff when they die, stopped at the end.

Each is ``python -m agents.alphaproof.actor --connect ... --parent <learner pid>``
(it exits by itself when the learner is gone, so nothing is orphaned even after
a SIGKILL of the learner). A process that exits while the run goes on is
started again after 1 s, 2 s, 4 s ... (at most 30 s; reset after a minute of life).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field


@dataclass
class Local:
    index: int
    argv: list[str]
    proc: subprocess.Popen | None = None
    started: float = 0.0
    restart_at: float | None = None
    backoff: float = 1.0
    restarts: int = 0
    exits: list[int] = field(default_factory=list)


class Supervisor:
    def __init__(self, connect: str, shares: list[int], servers: list[str], keys: str | None,
                 log_dir: str | None = None, env: dict[str, str] | None = None) -> None:
        self.locals = []
        for i, share in enumerate(shares):
            argv = [sys.executable, "-m", "agents.alphaproof.actor", "--connect", connect, "--actors", str(share),
                    "--name", f"local{i}", "--parent", str(os.getpid())]
            if servers:  # each local actor leases from one server (round robin), so a failing one costs its own
                argv += ["--server", servers[i % len(servers)]]
            if keys:
                argv += ["--keys", keys]
            self.locals.append(Local(i, argv))
        self.env = {**os.environ, **(env or {}), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.restarts = 0

    def start(self) -> None:
        for loc in self.locals:
            self._spawn(loc)

    def _spawn(self, loc: Local) -> None:
        loc.proc = subprocess.Popen(loc.argv, env=self.env, stdin=subprocess.DEVNULL)
        loc.started, loc.restart_at = time.monotonic(), None

    def pids(self) -> list[int]:
        return [loc.proc.pid for loc in self.locals if loc.proc is not None and loc.proc.poll() is None]

    def check(self) -> list[str]:
        """Restart dead actors when their backoff has passed; returns what happened, for the log."""
        events, now = [], time.monotonic()
        for loc in self.locals:
            if loc.proc is not None and (code := loc.proc.poll()) is not None:
                loc.exits.append(code)
                if now - loc.started > 60:
                    loc.backoff = 1.0
                loc.restart_at, loc.proc = now + loc.backoff, None
                events.append(f"local actor {loc.index} exited ({_describe(code)}); restarting in {loc.backoff:g} s")
                loc.backoff = min(30.0, 2 * loc.backoff)
            elif loc.proc is None and loc.restart_at is not None and now >= loc.restart_at:
                self._spawn(loc)
                loc.restarts += 1
                self.restarts += 1
        return events

    def stop(self, grace: float = 3.0, timeout: float = 10.0) -> None:
        """Wait ``grace`` s for them to exit (the coordinator told them to stop), then SIGTERM, then
        SIGKILL what is still there after ``timeout`` s (SIGTERM: they give their Lean processes back)."""
        running = [loc.proc for loc in self.locals if loc.proc is not None and loc.proc.poll() is None]
        end = time.monotonic() + grace
        while any(p.poll() is None for p in running) and time.monotonic() < end:
            time.sleep(0.05)
        running = [p for p in running if p.poll() is None]
        for p in running:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + timeout
        for p in running:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for loc in self.locals:
            loc.proc, loc.restart_at = None, None


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"
