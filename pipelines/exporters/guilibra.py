"""GUI-Libra SFT and RL samples, one function per format, on top of ``schemas.exporters.guilibra``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from schemas import Trajectory
from schemas.exporters.coords import CoordConvention
from schemas.exporters.guilibra import rl_record, sft_samples


def sft(traj: Trajectory, image_ref: Callable[[str], str], options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Conversation samples; ``mix`` reasoning|direct|both (GUI-Libra's 1:1 mix), ``coords`` norm1000|qwen25."""
    convention = CoordConvention(options.get("coords") or "norm1000")
    return sft_samples(traj, image_ref, convention, options.get("mix") or "both")


def rl(traj: Trajectory, image_ref: Callable[[str], str], options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One ground-truth record per step (0–1000 grid), for a GRPO reward function."""
    for step in traj.steps:
        yield rl_record(traj, step, image_ref)
