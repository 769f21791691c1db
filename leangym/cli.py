"""Running a command-line tool: a user's mistake is one clear line, not a traceback.

Every ``python -m ...`` entry point of the project ends with ``run_cli(main)``.
A missing or unreadable file, a bad theorem, an unreachable server or a value
the tool refused becomes ``error: ...`` on stderr and exit status 2 (as for a
bad flag); Ctrl-C and SIGTERM stop the run through the ordinary ``finally``
blocks (so Lean leases are given back) with status 130 / 143. Anything else is
a bug and keeps its traceback. ``LEANGYM_DEBUG=1`` shows the traceback of user
errors too.
Every tool's flags are parsed by :class:`ArgumentParser`, so a malformed flag is
that same one line (with a pointer to ``--help``), not argparse's usage block.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import pickle
import signal
import sys
import traceback
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

from leangym.backends.types import LeanError, ServerError

# What a user can cause: files, statements, servers, and values our own code checks.
# (ValueError covers json.JSONDecodeError and TheoremError.)
USER_ERRORS = (OSError, ValueError, LeanError, ServerError, pickle.UnpicklingError)


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one ``error: ...`` line and exit status 2, like every user error,
    and no abbreviated flags: ``--theorem`` (prove's flag) must not quietly mean train's ``--theorems``."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    return parse


def number(low: float = 0.0, high: float = math.inf, *, positive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high] (> low if ``positive``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value) or value < low or value > high or (positive and value == low):
            bound = f"> {low:g}" if positive else f">= {low:g}" if high == math.inf else f"in [{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}, got {text!r}")
        return value
    return parse


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """--help with each flag's default, as ArgumentDefaultsHelpFormatter, except where there is none to show
    (None, "", a required flag) or the help already says it in words ("(default: the shipped one)"); the
    description keeps its line breaks (its usage examples)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, "") or action.required or "default" in text:
            return text
        return super()._get_help_string(action)


@contextlib.contextmanager
def exclusive(lock: Path | None, what: str, flag: str) -> Iterator[None]:
    """Hold the lock file ``lock`` (created if missing) for this run alone, so that a second run given
    the same output (``what``, chosen with ``flag``) stops with one error line instead of writing into
    it at the same time. The lock is the OS's (``flock``): it goes with the process, however that ends;
    a run that ends normally also removes the file (a killed one leaves it, harmlessly: nothing holds it).
    ``None``: no lock (and none where the platform has no ``fcntl``)."""
    if lock is None or fcntl is None:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    f = _locked(lock, what, flag)
    try:
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()  # while held: a run waiting on this file finds it gone and locks a new one
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _locked(lock: Path, what: str, flag: str):
    """``lock`` opened and flock'ed, emptied; the file locked is the one at that path now (not one a
    finishing run removed between our open and our lock)."""
    while True:
        f = open(lock, "a+", encoding="utf-8")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise ValueError(f"{what} is in use by another run ({holder}); wait for it to end, or choose "
                             f"another {flag}") from None
        try:
            same = os.path.samestat(os.fstat(f.fileno()), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            f.seek(0)
            f.truncate()
            return f
        f.close()  # removed by the run that held it: lock the path's file anew


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it unwinds like Ctrl-C."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def run_cli(main: Callable[[], object]) -> None:
    """Call ``main()`` and exit with its status (see the module docstring)."""
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        status = main()
    except Terminated:
        print("terminated (SIGTERM)", file=sys.stderr)
        sys.exit(143)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except USER_ERRORS as e:
        sys.exit(user_error(e))
    sys.exit(status if isinstance(status, int) else 0)


def user_error(e: BaseException, context: str = "", hint: str = "") -> int:
    """Report a user's mistake as one ``error: {context}{e}{hint}`` line (its traceback too with
    ``LEANGYM_DEBUG=1``); returns the exit status, 2. For tools that catch an error to say more."""
    if os.environ.get("LEANGYM_DEBUG"):
        traceback.print_exception(e)
    what = str(e) or type(e).__name__
    if isinstance(e, pickle.UnpicklingError):  # torch's safe (weights-only) loader refused the file
        what = "not a checkpoint this tool can read (only tensors and plain values are loaded, never code)"
    print(f"error: {context}{what}{hint}", file=sys.stderr)
    return 2
