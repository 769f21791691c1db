"""The trainer's one gate: a search's proof counts (curriculum, replay rows, held-out rate) only once it has
been re-checked whole on a fresh Lean process of the trainer's own.

A search checks its proof on the process it searched on (that check ends the search), and an actor's
"verified" is a message from another process. Neither is what training rewards. :func:`recheck` checks
the proof text again with ``leangym.soundness.verify`` on a process nothing else touched, as the env's
reward and the harness's "proved" are checked. In-process runs pass every batch through
:func:`confirm`; the distributed learner passes every actor's claimed proof through :class:`Gate`.
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Sequence

from leangym.backends.types import LeanProcess, ServerError
from leangym.daemon_pool import DaemonPool
from leangym.soundness import SoundnessPolicy, verify
from leangym.theorem import Theorem

GATE_THREADS = 8  # re-checks at once on a server (each waits on a lease and three calls)
RECHECK_ATTEMPTS = 3  # tries of a re-check the server failed


@dataclass(frozen=True)
class Recheck:
    holds: bool
    error: str | None = None
    server_failure: bool = False  # the check could not run: no verdict on the proof


def recheck(theorem: Theorem, proof: str | None, new_process: Callable[[], LeanProcess],
            attempts: int = RECHECK_ATTEMPTS) -> Recheck:
    """Check ``proof`` as the whole proof of ``theorem`` on a fresh process from ``new_process()``; server
    trouble is tried again (1, 2 ... s apart), as it would otherwise cost solved searches only."""
    for attempt in range(attempts):
        check = _recheck_once(theorem, proof, new_process)
        if not check.server_failure or attempt + 1 == attempts:
            return check
        time.sleep(2.0 ** attempt)
    raise AssertionError("unreachable")


def _recheck_once(theorem: Theorem, proof: str | None, new_process: Callable[[], LeanProcess]) -> Recheck:
    if not isinstance(proof, str) or not proof.strip():
        return Recheck(False, "the result carries no proof text to check")
    try:
        process = new_process()
    except ServerError as e:
        return Recheck(False, f"could not get a Lean process for the re-check: {e}", server_failure=True)
    try:
        v = verify(process, theorem, proof, SoundnessPolicy(), spare=new_process)
    except ServerError as e:  # (verify reports server trouble itself; a lease may still raise)
        return Recheck(False, f"the re-check met a server failure: {e}", server_failure=True)
    finally:
        try:
            process.close()
        except Exception:  # noqa: BLE001 -- a lease on a dead server cannot be given back
            pass
    return Recheck(v.ok, None if v.ok else (v.error or "the re-check failed"), v.server_failure)


def confirm(theorems: Sequence[Theorem], results: Sequence, new_process: Callable[[], LeanProcess],
            errors: list[str] | None = None) -> list:
    """``results`` (search results, None for a crashed search) with ``verified`` decided here: a verified
    proof that does not hold again is unsolved (its tree gives no rows); one the server would not let
    us re-check, after :data:`RECHECK_ATTEMPTS` tries, has no verdict (stop reason ``server_unavailable``).
    ``errors`` collects what failed."""
    todo = [i for i, r in enumerate(results) if r is not None and r.verified]
    if not todo:
        return list(results)
    checks = _map(lambda i: recheck(theorems[i], results[i].proof, new_process), todo, new_process)
    out = list(results)
    for i, c in zip(todo, checks):
        if not c.holds:
            out[i] = _unconfirmed(results[i], c)
            if errors is not None and not c.server_failure:
                errors.append(f"{theorems[i].name}: the search's proof did not hold when re-checked on a fresh "
                              f"process (not counted): {c.error}")
    return out


def _unconfirmed(result, c: Recheck):
    stop = "server_unavailable" if c.server_failure else result.stop_reason
    return dataclasses.replace(result, verified=False, stop_reason=stop, verify_error=f"re-check: {c.error}")


def _map(fn, items: list, new_process) -> list:
    if getattr(new_process, "in_process", False) or len(items) == 1:
        return [fn(x) for x in items]
    pool = DaemonPool(min(GATE_THREADS, len(items)), name="proof-gate")
    try:
        return pool.map(fn, items)
    finally:
        pool.close()


class Gate:
    """The distributed learner's re-checks: at once for in-process Lean, else on :data:`GATE_THREADS`
    threads, so that the learner's loop never waits on a server for them."""

    def __init__(self, new_process: Callable[[], LeanProcess]) -> None:
        self.new_process = new_process
        inline = getattr(new_process, "in_process", False)
        self.pool = None if inline else DaemonPool(GATE_THREADS, name="proof-gate")

    def submit(self, theorem: Theorem, proof: str | None) -> Future:
        if self.pool is not None:
            return self.pool.submit(lambda _: recheck(theorem, proof, self.new_process), None)
        f: Future = Future()
        f.set_result(recheck(theorem, proof, self.new_process))
        return f

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
