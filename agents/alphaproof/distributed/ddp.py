"""The learner's gradient steps, on one process or as a DDP group under torchrun.

    torchrun --standalone --nproc_per_node=2 -m agents.alphaproof.train --actors 64 ...

Every rank runs the same start (checkpoint, warm start: same seed, same net;
DDP's construction then copies rank 0's weights to all), serves inference
on its own device, and takes part in every step: rank 0 samples
``--batch-size`` rows per rank from its replay buffer and broadcasts them
(JSON bytes in a uint8 tensor on a gloo group, never pickle); each rank computes the
loss on its share and DDP averages the gradients (NCCL on GPU, gloo on CPU).
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


def rank_device(device: str) -> str:
    """The device this process uses: under torchrun, ``--device cuda`` (any index) is the rank's own GPU,
    ``cuda:LOCAL_RANK`` (``cuda:0`` where each rank sees one GPU), made current; decided before the net
    is built, so net, inference and DDP agree."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not device.startswith("cuda"):
        return device
    local, count = int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count()
    one_each = count == 1 and "CUDA_VISIBLE_DEVICES" in os.environ  # (a GPU made visible to each rank alone)
    if local >= count and not one_each:
        raise ValueError(f"torchrun started local rank {local} on a machine with {count} CUDA device(s): "
                         f"pass --nproc_per_node={count} or fewer (NCCL takes one rank per GPU)")
    index = 0 if one_each else local
    torch.cuda.set_device(index)
    return f"cuda:{index}"


class World:
    def __init__(self, rank: int = 0, size: int = 1, device: str = "cpu", control=None) -> None:
        self.rank, self.size = rank, size
        self.device = torch.device(device)
        # rank 0's commands travel on gloo (CPU tensors) even under NCCL: a follower waiting in an NCCL
        # broadcast would hold its GPU's default stream, and with it the inference thread's forward passes
        self.control = control

    @classmethod
    def from_env(cls, device: str) -> "World":
        """torchrun's rank and world size (``RANK``, ``WORLD_SIZE``); 1 process without torchrun.
        ``device``: this rank's, as :func:`rank_device` chose it (before the net was built)."""
        size = int(os.environ.get("WORLD_SIZE", "1"))
        if size <= 1:
            return cls(0, 1, device)
        timeout = timedelta(hours=6)  # (rank 0 may not step for a while)
        if not dist.is_initialized():
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo", timeout=timeout)
        control = dist.new_group(backend="gloo", timeout=timeout) if dist.get_backend() != "gloo" else None
        return cls(dist.get_rank(), dist.get_world_size(), device, control)

    def endpoints(self, port: int) -> list[str]:
        """Every rank's inference endpoint; ``tcp://*:PORT`` where it is rank 0's host (an actor puts
        in the host it reached the learner at)."""
        me = f"{socket.gethostname()}|{port}"
        if self.size == 1:
            return [f"tcp://*:{port}"]
        mine = torch.zeros(256, dtype=torch.uint8)
        raw = me.encode()[:256]
        mine[:len(raw)] = torch.tensor(list(raw), dtype=torch.uint8)
        every = [torch.zeros_like(mine) for _ in range(self.size)]
        dist.all_gather(every, mine, group=self.control)
        names = [bytes(t.tolist()).rstrip(b"\0").decode() for t in every]
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
            # (a shard of rows without a tactic leaves the policy head unused that step; most use it all)
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
        group = self.world.control
        dist.broadcast(torch.tensor([op, len(payload)], dtype=torch.int64), 0, group=group)
        if payload:
            dist.broadcast(torch.frombuffer(bytearray(payload), dtype=torch.uint8), 0, group=group)

    def follow(self, check=lambda: None) -> None:
        """Ranks > 0: take part in rank 0's steps until it says stop (``check()`` raising ends it)."""
        while True:
            check()
            head = torch.zeros(2, dtype=torch.int64)
            dist.broadcast(head, 0, group=self.world.control)
            op, n = int(head[0]), int(head[1])
            if op == STOP:
                return
            data = torch.zeros(n, dtype=torch.uint8)
            if n:
                dist.broadcast(data, 0, group=self.world.control)
            rows = json.loads(bytes(data.numpy()).decode())
            self._step(rows[self.world.rank::self.world.size])
            self.publish_now()

    def stop(self) -> None:
        """Rank 0 ends the followers' loop (once)."""
        if self.world.size > 1 and self.world.rank == 0 and not self.stopped:
            self.stopped = True
            self._command(STOP)
        self.net.model.eval()
