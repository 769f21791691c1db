"""The learner's gradient steps, on one process or as a DDP group under torchrun.

    torchrun --standalone --nproc_per_node=2 -m agents.alphaproof.train --actors 64 ...

Every rank runs the same start (checkpoint, warm start: same seed, same net;
DDP's construction then copies rank 0's weights to all), serves inference
on its own device, and takes part in every step: rank 0 samples
``--batch-size`` rows per rank from its replay buffer and broadcasts them
(JSON bytes in a uint8 tensor, never pickle); each rank computes the loss on
its share and DDP averages the gradients (NCCL on GPU, gloo on CPU).
"""
from __future__ import annotations

import json
import os
import socket
import time
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

STEP, STOP = 1, 2
PUBLISH_EVERY_S = 0.25  # the inference service gets new weights at most this often (and at iteration ends)


class World:
    def __init__(self, rank: int = 0, size: int = 1, device: str = "cpu") -> None:
        self.rank, self.size = rank, size
        self.device = torch.device(device)

    @classmethod
    def from_env(cls, device: str) -> "World":
        """torchrun's rank and world size (``RANK``, ``WORLD_SIZE``); 1 process without torchrun."""
        size = int(os.environ.get("WORLD_SIZE", "1"))
        if size <= 1:
            return cls(0, 1, device)
        if not dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() and device.startswith("cuda") else "gloo"
            dist.init_process_group(backend, timeout=timedelta(hours=6))  # (rank 0 may not step for a while)
        if dist.get_backend() == "nccl":
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
            torch.cuda.set_device(device)
        return cls(dist.get_rank(), dist.get_world_size(), device)

    @property
    def comm_device(self) -> torch.device:
        return self.device if dist.is_initialized() and dist.get_backend() == "nccl" else torch.device("cpu")

    def endpoints(self, port: int) -> list[str]:
        """Every rank's inference endpoint; ``tcp://*:PORT`` where it is rank 0's host (an actor puts
        in the host it reached the learner at)."""
        me = f"{socket.gethostname()}|{port}"
        if self.size == 1:
            return [f"tcp://*:{port}"]
        mine = torch.zeros(256, dtype=torch.uint8, device=self.comm_device)
        raw = me.encode()[:256]
        mine[:len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
        every = [torch.zeros_like(mine) for _ in range(self.size)]
        dist.all_gather(every, mine)
        names = [bytes(t.cpu().tolist()).rstrip(b"\0").decode() for t in every]
        host0 = names[0].split("|")[0]
        return [f"tcp://{'*' if h == host0 else h}:{p}" for h, p in (n.split("|") for n in names)]

    def close(self) -> None:
        if self.size > 1 and dist.is_initialized():
            dist.destroy_process_group()


class _Losses(torch.nn.Module):
    """The net's losses as a module's forward, so that DDP sees the forward it wraps."""

    def __init__(self, net) -> None:
        super().__init__()
        self.net = net
        self.model = net.model  # (registered: DDP syncs and reduces its parameters)

    def forward(self, batch):
        return self.net.losses(batch)


class Learner:
    def __init__(self, net, opt: torch.optim.Optimizer, world: World, args) -> None:
        self.net, self.opt, self.world, self.args = net, opt, world, args
        self.version = 0  # gradient steps taken by this run (the weight version actors see)
        self.publish = None  # (version) -> None: set by the loop to feed the inference service
        self._published = 0.0
        self.module = None
        if world.size > 1:
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [world.device.index] if world.device.type == "cuda" else None
            # (a shard of rows without a tactic leaves the policy head unused that step)
            self.module = DDP(_Losses(net), device_ids=ids, find_unused_parameters=True)
        self.stopped = False

    def weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.net.model.state_dict().items()}

    def publish_now(self) -> None:
        if self.publish is not None:
            self.publish(self.version)
            self._published = time.monotonic()

    # ------------------------------------------------------------------ steps
    def step(self, rows: list[dict[str, Any]]) -> dict[str, float]:
        """One step on ``rows`` (rank 0: ``batch_size`` per rank, which it shares out)."""
        if self.world.size > 1:
            self._command(STEP, rows)
            rows = rows[self.world.rank::self.world.size]
        out = self._step(rows)
        if time.monotonic() - self._published >= PUBLISH_EVERY_S:
            self.publish_now()
        return out

    def _step(self, rows: list[dict[str, Any]]) -> dict[str, float]:
        net = self.net
        net.model.train()
        for group in self.opt.param_groups:
            group["lr"] = self.args.lr
        autocast = torch.autocast(device_type=net.device.type, dtype=torch.bfloat16,
                                  enabled=net.device.type == "cuda")
        with autocast:
            out = self.module(net.collate(rows)) if self.module is not None else net.losses(rows)
        self.opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        self.opt.step()
        self.version += 1
        return {k: float(v.item()) for k, v in out.items()}

    def _command(self, op: int, rows: list[dict[str, Any]] | None = None) -> None:
        payload = b"" if rows is None else json.dumps(rows, ensure_ascii=False).encode()
        head = torch.tensor([op, len(payload)], dtype=torch.int64, device=self.world.comm_device)
        dist.broadcast(head, 0)
        if payload:
            data = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(self.world.comm_device)
            dist.broadcast(data, 0)

    def follow(self) -> None:
        """Ranks > 0: take part in rank 0's steps until it says stop."""
        while True:
            head = torch.zeros(2, dtype=torch.int64, device=self.world.comm_device)
            dist.broadcast(head, 0)
            op, n = int(head[0]), int(head[1])
            if op == STOP:
                return
            data = torch.zeros(n, dtype=torch.uint8, device=self.world.comm_device)
            if n:
                dist.broadcast(data, 0)
            rows = json.loads(bytes(data.cpu().numpy()).decode())
            self._step(rows[self.world.rank::self.world.size])
            self.publish_now()

    def stop(self) -> None:
        """Rank 0 ends the followers' loop (once)."""
        if self.world.size > 1 and self.world.rank == 0 and not self.stopped:
            self.stopped = True
            self._command(STOP)
        self.net.model.eval()
