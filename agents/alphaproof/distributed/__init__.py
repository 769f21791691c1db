"""Distributed AlphaProof training: a learner + coordinator, an inference service, actor processes.

    wire.py         the message format (JSON header + raw numpy frames; never pickle)
    sockets.py      ZeroMQ sockets: bind/connect, CurveZMQ (--keys), malformed messages dropped
    inference.py    merges leaf evaluations of all actors into one forward pass (newest weights)
    coordinator.py  theorem dispatch (actors pull work), heartbeats, requeues, results, status
    actor.py        an actor process: batched MCTS on its share of searches, results streamed back
    learner.py      the learner loop: continuous learning at a bounded replay ratio, eval, checkpoints
    supervisor.py   local actor processes: start, restart with backoff, stop
    ddp.py          torchrun: one DDP learner per rank, every rank serving inference
    keys.py         ``python -m agents.alphaproof.keys DIR`` makes the CurveZMQ key pairs

See docs/distributed.md.
"""
