"""Checkpoints that make a killed run resumable without losing or repeating work.

A checkpoint is a directory ``<out>/checkpoints/step-<N>/`` holding the model (``save_pretrained``), the
tokenizer and image processor (so it is itself a loadable model directory), the optimizer and scheduler state,
RNG states, and ``state.json`` (step, data position, curriculum state). It is written under a temporary name
and renamed, so a kill mid-save leaves the previous checkpoint as the latest; ``latest`` only returns complete
ones.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

STATE = "state.json"


def save(out: Path, step: int, model: Any, tokenizer: Any, image_processor: Any, optimizer: Any, scheduler: Any,
         state: dict[str, Any], keep: int = 2) -> Path:
    root = out / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}"
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    image_processor.save_pretrained(tmp)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optim.pt")
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
               tmp / "rng.pt")
    (tmp / STATE).write_text(json.dumps({**state, "step": step}, indent=1) + "\n")
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    for old in sorted(p for p in root.glob("step-*") if (p / STATE).exists())[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(out: Path) -> Path | None:
    """The newest complete checkpoint under ``out``, or None."""
    done = sorted(p for p in (out / "checkpoints").glob("step-*") if (p / STATE).exists())
    return done[-1] if done else None


def restore(ckpt: Path, optimizer: Any, scheduler: Any) -> dict[str, Any]:
    """Load optimizer, scheduler and RNG state (the model is loaded from ``ckpt`` by the caller)."""
    opt = torch.load(ckpt / "optim.pt", weights_only=False)
    optimizer.load_state_dict(opt["optimizer"])
    scheduler.load_state_dict(opt["scheduler"])
    rng = torch.load(ckpt / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    return json.loads((ckpt / STATE).read_text())
