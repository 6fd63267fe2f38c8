"""Data-parallel training through HF ``accelerate``: one process per device, gradients averaged every step.

Launch with ``torchrun --nproc_per_node N -m pipelines.cli train sft ...`` or ``accelerate launch`` (any config
accelerate understands: multi-GPU DDP, CPU/gloo). A single process (no ``WORLD_SIZE`` > 1 in the environment)
gets ``Single``, which does nothing, so the common case carries no distributed machinery — and accelerate's
process-wide singleton state is never created by tests that train several times in one process.

What each rank does differently is decided elsewhere and only needs ``rank`` / ``world``: the shard stream reads
every ``world``-th row group (``training.data``), GRPO samples its own prompts. What they must agree on goes
through here: the model is wrapped in DDP (``prepare_model``), GRPO's global token count and metrics are summed
(``all_sum``), per-rank resume positions and rejects are gathered (``gather``) so rank 0 writes them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch


class Single:
    """One process: every collective is the identity."""

    rank = 0
    world = 1
    is_main = True

    def __init__(self, device: torch.device):
        self.device = device

    def prepare_model(self, model: Any) -> Any:
        return model

    def unwrap(self, model: Any) -> Any:
        return model

    @contextlib.contextmanager
    def no_sync(self, model: Any) -> Iterator[None]:
        yield

    def all_sum(self, values: list[float]) -> list[float]:
        return list(values)

    def gather(self, obj: Any) -> list[Any]:
        return [obj]

    def average_gradients(self, params: list[torch.nn.Parameter]) -> None:
        return None

    def barrier(self) -> None:
        return None


class Accelerated(Single):
    """Several processes under ``accelerate`` (DDP; gloo on CPU, NCCL on GPUs)."""

    def __init__(self, cpu: bool):
        from accelerate import Accelerator

        self.acc = Accelerator(cpu=cpu)
        super().__init__(self.acc.device)
        self.rank = self.acc.process_index
        self.world = self.acc.num_processes
        self.is_main = self.acc.is_main_process

    def prepare_model(self, model: Any) -> Any:
        return self.acc.prepare_model(model)

    def unwrap(self, model: Any) -> Any:
        return self.acc.unwrap_model(model)

    @contextlib.contextmanager
    def no_sync(self, model: Any) -> Iterator[None]:
        with self.acc.no_sync(model):
            yield

    def all_sum(self, values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.SUM)
        return [float(x) for x in t.tolist()]

    def gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out

    def average_gradients(self, params: list[torch.nn.Parameter]) -> None:
        """Mean of every trainable parameter's gradient across ranks, for loops that accumulated under ``no_sync``
        with a number of backward passes that may differ between ranks (GRPO after dropping groups)."""
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            torch.distributed.all_reduce(p.grad, op=torch.distributed.ReduceOp.SUM)
            p.grad.div_(self.world)

    def barrier(self) -> None:
        self.acc.wait_for_everyone()


def world_from_env() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def make(device: torch.device) -> Single:
    """``Accelerated`` when launched with several processes, else ``Single`` on ``device``."""
    if world_from_env() > 1:
        return Accelerated(cpu=device.type == "cpu")
    return Single(device)
