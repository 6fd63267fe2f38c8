"""Checkpoints that make a killed run resumable without losing or repeating work.

A checkpoint is a directory ``<out>/checkpoints/step-<N>/`` holding the model (``save_pretrained``, fp32 master
weights, so resuming continues from exactly the weights the optimizer was updating), the tokenizer and image
processor (so it is itself a loadable model directory), the optimizer and scheduler state, every rank's RNG
states — Python, NumPy, torch CPU and, where CUDA is in use, every CUDA device's generator (sampling on a GPU
draws from those, so without them a resumed GRPO run would sample different rollouts) — and ``state.json``
(step, each rank's data position, curriculum state). It is written under a temporary name and renamed, so a
kill mid-save leaves the previous checkpoint as the latest; ``latest`` only returns complete ones.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.optim.lr_scheduler import LRScheduler

from schemas.fileio import rename_durably

STATE = "state.json"


def rng_state() -> dict[str, Any]:
    """This process's RNG states (CUDA's only when CUDA has been initialised: reading it would initialise it)."""
    st: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict[str, Any]) -> None:
    random.setstate(st["python"])
    np.random.set_state(st["numpy"])
    torch.set_rng_state(st["torch"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def save(out: Path, step: int, model: Any, tokenizer: Any, image_processor: Any, optimizer: torch.optim.Optimizer,
         scheduler: LRScheduler,
         state: dict[str, Any], keep: int = 2, rng_states: list[dict[str, Any]] | None = None,
         state_dict: dict[str, torch.Tensor] | None = None) -> Path:
    """Write ``step-<N>`` atomically (call on the main process only; ``rng_states`` holds every rank's)."""
    root = out / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}"
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(tmp, state_dict=state_dict)
    tokenizer.save_pretrained(tmp)
    image_processor.save_pretrained(tmp)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optim.pt")
    for rank, st in enumerate(rng_states or [rng_state()]):
        torch.save(st, tmp / f"rng-rank{rank}.pt")
    (tmp / STATE).write_text(json.dumps({**state, "step": step}, indent=1) + "\n")
    if final.exists():
        shutil.rmtree(final)
    rename_durably(tmp, final)
    for old in sorted(p for p in root.glob("step-*") if (p / STATE).exists())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(out: Path) -> Path | None:
    """The newest complete checkpoint under ``out``, or None."""
    done = sorted(p for p in (out / "checkpoints").glob("step-*") if (p / STATE).exists())
    return done[-1] if done else None


def restore(ckpt: Path, optimizer: torch.optim.Optimizer, scheduler: LRScheduler, rank: int = 0) -> dict[str, Any]:
    """Load optimizer, scheduler and this rank's RNG state (the model is loaded from ``ckpt`` by the caller)."""
    opt = torch.load(ckpt / "optim.pt", weights_only=False)
    optimizer.load_state_dict(opt["optimizer"])
    scheduler.load_state_dict(opt["scheduler"])
    path = ckpt / f"rng-rank{rank}.pt"
    if not path.exists():
        older = ckpt / "rng.pt"  # checkpoints written before per-rank RNG files
        if rank != 0 or not older.exists():
            raise FileNotFoundError(f"{ckpt}: no RNG state for rank {rank}: it was written by a run with fewer "
                                    "processes; resume with the same number of processes")
        path = older
    set_rng_state(torch.load(path, weights_only=False))
    return json.loads((ckpt / STATE).read_text())
