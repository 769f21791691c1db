"""The message format between learner, inference service and actors: never pickle.

A message is a list of ZeroMQ frames::

    [b"LGAP1", header (UTF-8 JSON object), array 0 (raw bytes), array 1, ...]

The header names its type (``"t"``) and describes every array that follows
(``"arrays": [[name, dtype, length], ...]``). Strings travel as columns: the
UTF-8 bytes of all of them (uint8) plus int32 offsets, so a batch of 10,000
training rows is a handful of frames, not 10,000 objects. :func:`unpack`
checks everything (magic, JSON, types, fields, dtypes, lengths, offsets,
UTF-8) and raises :class:`WireError`; a receiver logs it and drops the message.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

MAGIC = b"LGAP1"
MAX_HEADER = 1 << 20  # bytes: a header is a small JSON object; arrays carry the bulk
DTYPES = {"u1": np.uint8, "i1": np.int8, "i4": np.int32, "f4": np.float32, "f8": np.float64}


class WireError(ValueError):
    """A malformed message (what is wrong with it, for the log)."""


@dataclass
class Message:
    t: str  # the type
    header: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.header[key]


# ============================================================================ packing
def pack(t: str, header: Mapping[str, Any] | None = None, arrays: Mapping[str, np.ndarray] | None = None
         ) -> list[bytes | memoryview]:
    """Frames of a message of type ``t`` (``header``: JSON values; ``arrays``: 1-d numpy arrays)."""
    specs, frames = [], []
    for name, a in (arrays or {}).items():
        a = np.ascontiguousarray(a)
        code = next((c for c, d in DTYPES.items() if a.dtype == d), None)
        if code is None or a.ndim != 1:
            raise TypeError(f"array {name!r}: 1-d {'/'.join(DTYPES)} only, got {a.dtype} {a.shape}")
        specs.append([name, code, int(a.shape[0])])
        frames.append(memoryview(a).cast("B"))
    head = json.dumps({**(header or {}), "t": t, "arrays": specs}, separators=(",", ":"), allow_nan=False)
    return [MAGIC, head.encode(), *frames]


def unpack(frames: Sequence[bytes | memoryview], expect: Mapping[str, "Schema"]) -> Message:
    """The message in ``frames``, checked against the schema of its type in ``expect``."""
    if len(frames) < 2 or bytes(frames[0]) != MAGIC:
        raise WireError(f"not a leangym message (first frame {bytes(frames[0])[:16]!r}, {len(frames)} frames)"
                        if frames else "an empty message")
    raw = bytes(frames[1])
    if len(raw) > MAX_HEADER:
        raise WireError(f"header of {len(raw)} bytes (at most {MAX_HEADER})")
    try:
        header = json.loads(raw.decode("utf-8"), parse_int=_int, parse_float=_float, parse_constant=_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError(f"header is not UTF-8 JSON: {str(e)[:200]}") from None
    except RecursionError:
        raise WireError("header nested too deeply") from None
    if not isinstance(header, dict) or not isinstance(header.get("t"), str):
        raise WireError("header is not a JSON object with a string 't'")
    t = header["t"]
    if t not in expect:
        raise WireError(f"unexpected message type {t!r} here (expected one of {sorted(expect)})")
    specs = header.get("arrays")
    if not isinstance(specs, list) or len(specs) != len(frames) - 2:
        raise WireError(f"{t}: 'arrays' must describe the {len(frames) - 2} frames after the header")
    arrays = {}
    for spec, frame in zip(specs, frames[2:]):
        if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str) and spec[1] in DTYPES
                and isinstance(spec[2], int) and spec[2] >= 0):
            raise WireError(f"{t}: bad array description {str(spec)[:80]}")
        dtype = np.dtype(DTYPES[spec[1]])
        buf = memoryview(frame)
        if buf.nbytes != spec[2] * dtype.itemsize:
            raise WireError(f"{t}: array {spec[0]!r} has {buf.nbytes} bytes, not {spec[2]} x {dtype}")
        arrays[spec[0]] = np.frombuffer(buf, dtype=dtype)
    msg = Message(t, header, arrays)
    expect[t].check(msg)
    return msg


# Numbers a header may hold: what a float carries exactly, and finite (json.loads takes NaN, 1e400, 10**400)
_MAX_INT = 1 << 53


def _int(text: str) -> int:
    v = int(text)
    if abs(v) >= _MAX_INT:
        raise ValueError(f"integer {text[:24]}... out of range (|n| < 2**53)")
    return v


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text[:24]} is not finite")
    return v


def _constant(text: str) -> float:
    raise ValueError(f"{text} is not a number")


# ============================================================================ schemas
_KINDS = {"int": int, "float": (int, float), "str": str, "bool": bool, "list": list, "dict": dict}


@dataclass(frozen=True)
class Schema:
    """Required header fields (name -> kind, ``"?"`` suffix: may be null) and array names with dtypes."""

    fields: Mapping[str, str] = field(default_factory=dict)
    arrays: Mapping[str, str] = field(default_factory=dict)

    def check(self, msg: Message) -> None:
        for name, kind in self.fields.items():
            nullable = kind.endswith("?")
            v = msg.header.get(name)
            if v is None and nullable:  # (null, or missing: a field an older peer did not send)
                continue
            want = _KINDS[kind.rstrip("?")]
            if isinstance(v, bool) and kind.rstrip("?") != "bool" or not isinstance(v, want):
                raise WireError(f"{msg.t}: field {name!r} must be {kind}, got {type(v).__name__}")
            if isinstance(v, float) and not math.isfinite(v):
                raise WireError(f"{msg.t}: field {name!r} is not finite")
        for name, code in self.arrays.items():
            a = msg.arrays.get(name)
            if a is None or a.dtype != np.dtype(DTYPES[code]):
                raise WireError(f"{msg.t}: array {name!r} ({code}) missing or of another dtype")


# ============================================================================ string columns
def encode_strings(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes uint8, offsets int32[n + 1])``: text i is ``bytes[offsets[i]:offsets[i + 1]]``."""
    encoded = [s.encode("utf-8") for s in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def decode_strings(data: np.ndarray, offsets: np.ndarray, n: int | None = None) -> list[str]:
    """The texts of :func:`encode_strings`' columns; WireError if the offsets or UTF-8 are bad."""
    if len(offsets) == 0 or (n is not None and len(offsets) != n + 1):
        raise WireError(f"string offsets: {len(offsets)} entries for {n} strings")
    if offsets[0] != 0 or offsets[-1] != len(data) or np.any(np.diff(offsets) < 0):
        raise WireError("string offsets are not increasing from 0 to the data's length")
    raw = data.tobytes()
    try:
        return [raw[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    except UnicodeDecodeError as e:
        raise WireError(f"a string is not UTF-8: {e}") from None


def string_arrays(prefix: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    data, offsets = encode_strings(texts)
    return {f"{prefix}": data, f"{prefix}_off": offsets}


def read_strings(msg: Message, prefix: str, n: int | None = None) -> list[str]:
    if prefix not in msg.arrays or f"{prefix}_off" not in msg.arrays:
        raise WireError(f"{msg.t}: string column {prefix!r} missing")
    return decode_strings(msg.arrays[prefix], msg.arrays[f"{prefix}_off"], n)


def str_schema(*prefixes: str) -> dict[str, str]:
    return {k: v for p in prefixes for k, v in ((p, "u1"), (f"{p}_off", "i4"))}


# ============================================================================ training rows
NO_STEPS = -1  # steps_to_go None ("not provable within budget")
NO_VALUE = -2  # no steps_to_go at all: the row has no value target (only rejected tactics, say)


def rows_to_arrays(rows: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Training rows (``state``, ``tactic`` or absent, ``steps_to_go`` None, a number or absent, ``rejected``
    tactics or absent) as columns; a row's rejected tactics are ``n_rejected`` consecutive strings."""
    has_tactic = np.array([r.get("tactic") is not None for r in rows], dtype=np.int8)
    steps = np.array([NO_VALUE if "steps_to_go" not in r else NO_STEPS if r["steps_to_go"] is None
                      else int(r["steps_to_go"]) for r in rows], dtype=np.int32)
    rejected = [list(r.get("rejected") or []) for r in rows]
    return {**string_arrays("state", [r["state"] for r in rows]),
            **string_arrays("tactic", [r.get("tactic") or "" for r in rows]), "has_tactic": has_tactic,
            "steps": steps, **string_arrays("rejected", [t for ts in rejected for t in ts]),
            "n_rejected": np.array([len(ts) for ts in rejected], dtype=np.int32)}


ROW_ARRAYS = {**str_schema("state", "tactic", "rejected"), "has_tactic": "i1", "steps": "i4", "n_rejected": "i4"}


def rows_from_arrays(msg: Message, n: int) -> list[dict[str, Any]]:
    states, tactics = read_strings(msg, "state", n), read_strings(msg, "tactic", n)
    has, steps, n_rej = msg.arrays["has_tactic"], msg.arrays["steps"], msg.arrays["n_rejected"]
    if len(has) != n or len(steps) != n or len(n_rej) != n or np.any(steps < NO_VALUE) or np.any(n_rej < 0):
        raise WireError(f"{msg.t}: row columns disagree with n_rows {n}")
    rejected = read_strings(msg, "rejected", int(n_rej.sum()))
    rows, at = [], 0
    for s, tac, h, k, r in zip(states, tactics, has.tolist(), steps.tolist(), n_rej.tolist()):
        row: dict[str, Any] = {"state": s} if k == NO_VALUE else {"state": s, "steps_to_go": None if k == NO_STEPS else k}
        if h:
            row["tactic"] = tac
        if r:
            row["rejected"], at = rejected[at:at + r], at + r
        rows.append(row)
    return rows


# ============================================================================ the messages
# actor -> coordinator (the learner's work ROUTER)
TO_COORDINATOR = {
    "hello": Schema({"actor": "str", "searches": "int", "pid": "int", "host": "str"}),
    "want": Schema({"actor": "str", "n": "int", "req": "int"}),
    "beat": Schema({"actor": "str", "stats": "dict", "tasks": "list"}),
    "bye": Schema({"actor": "str"}),
    "status": Schema(),
}
# coordinator -> actor
TO_ACTOR = {
    # (heartbeat_timeout_s, newer learners': how long the actor waits for an acknowledgement)
    "welcome": Schema({"config": "dict", "inference": "list", "results": "int", "heartbeat_s": "float"}),
    "work": Schema({"req": "int", "tasks": "list", "wait": "float"}),
    "who": Schema(),  # the coordinator does not know this actor (a restarted learner): say hello again
    "ack": Schema({"version": "int"}),
    # header "final": false (a learner interrupted, a --resume may follow); absent (older learners): true
    "stop": Schema({"why": "str"}),
}
TO_STATUS = {"status": Schema({"table": "dict"})}
# actor -> coordinator (results PULL): one finished search, with its training rows
RESULT = {"result": Schema({"actor": "str", "task": "int", "status": "str", "verified": "bool", "verdict": "bool",
                            "rate_verdict": "bool", "stop_reason": "str?", "simulations": "int", "lean_calls": "int",
                            "wall_s": "float", "version": "int", "n_rows": "int", "error": "str?",
                            "proof": "str?"}, ROW_ARRAYS)}  # proof: the text the learner re-checks (proof_gate)
# actor -> inference ROUTER, and back
EVAL_REQUEST = {"eval": Schema({"id": "int", "n": "int"}, {**str_schema("state"), "k": "i4"})}
EVAL_REPLY = {"evals": Schema({"id": "int", "n": "int", "version": "int"},
                              {**str_schema("tactic"), "count": "i4", "logp": "f4", "value": "f4"})}
