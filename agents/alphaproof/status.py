"""``python -m agents.alphaproof.status --connect tcp://LEARNER:PORT``: a live table of a distributed run.

Actors (searches/s, Lean calls/s, Lean latency, errors), inference (batch fill, queue)
and learner (steps, rows/s in, replay size, weight version), refreshed in place every
``--every`` seconds; ``--once`` prints one table (``--json``: the raw numbers) and exits.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Sequence

import zmq

from agents.alphaproof.distributed.sockets import Net, client_keys, receive, tcp_endpoint
from agents.alphaproof.distributed.wire import TO_STATUS, pack
from leangym.cli import ArgumentParser, HelpFormatter, run_cli


def fetch(znet: Net, endpoint: str, timeout_s: float = 5.0) -> dict[str, Any] | None:
    sock = znet.connect(zmq.DEALER, endpoint)
    try:
        sock.send_multipart(pack("status"))
        if sock.poll(int(1e3 * timeout_s)):
            got = receive(sock, TO_STATUS)
            if got is not None:
                return got[1]["table"]
        return None
    finally:
        sock.close(linger=0)


def render(t: dict[str, Any]) -> str:
    cols = ("actor", "host", "searches", "held", "searches_per_s", "lean_calls_per_s", "lean_latency_ms", "errors",
            "seen_s_ago")
    heads = ("actor", "host", "slots", "held", "searches/s", "lean/s", "lean ms", "errors", "seen")
    rows = [[str(a.get(c, "-")) for c in cols] for a in t.get("actors", [])]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows] or ["(no actors connected)"]
    inf, lr = t.get("inference", {}), t.get("learner", {})
    lines.append(f"inference: batch {inf.get('batch_mean', 0):.1f} states, fill {inf.get('fill', 0):.2f}, "
                 f"queue {inf.get('queue', 0)}, wait {inf.get('queue_wait_ms', 0):.1f} ms, "
                 f"weights v{inf.get('version', 0)}")
    lines.append(f"learner: iteration {lr.get('iteration', 0)}, steps {lr.get('steps', 0)}, "
                 f"rows/s in {lr.get('rows_per_s', 0):.1f}, replay {lr.get('replay', 0)}, "
                 f"replay ratio {lr.get('replay_ratio', 0):.2f}, version {lr.get('version', 0)}")
    lines.append(f"queue {t.get('queue', 0)} theorems, requeued {t.get('requeued', 0)}, "
                 f"joins {t.get('joins', 0)}, malformed messages dropped {t.get('dropped_messages', 0)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m agents.alphaproof.status", formatter_class=HelpFormatter,
                       description="A live table of a distributed AlphaProof training run.")
    p.add_argument("--connect", required=True, type=tcp_endpoint, metavar="tcp://HOST:PORT",
                   help="the learner's address")
    p.add_argument("--keys", type=client_keys, default=None, metavar="DIR", help="CurveZMQ keys (as the actors')")
    p.add_argument("--every", type=float, default=2.0, help="seconds between refreshes")
    p.add_argument("--once", action="store_true", help="print one table and exit")
    p.add_argument("--json", action="store_true", help="with --once: the raw numbers as JSON")
    ns = p.parse_args(argv)
    znet = Net(ns.keys)
    try:
        while True:
            t = fetch(znet, ns.connect)
            if t is None:
                text = f"no answer from {ns.connect} (is the learner running? same --keys?)"
                if ns.once:
                    print(text, file=sys.stderr)
                    return 1
            else:
                text = json.dumps(t) if ns.json and ns.once else render(t)
            if ns.once:
                print(text)
                return 0
            sys.stdout.write("\x1b[H\x1b[2J" + time.strftime("%H:%M:%S ") + ns.connect + "\n" + text + "\n")
            sys.stdout.flush()
            time.sleep(ns.every)
    finally:
        znet.close()


if __name__ == "__main__":
    run_cli(main)
