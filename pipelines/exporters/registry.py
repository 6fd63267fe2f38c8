"""Export formats by name: each is ``(trajectory, image_ref, options) -> iterator of JSON-able samples``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pipelines.exporters import aguvis, guilibra, plain
from schemas import Trajectory

SampleFn = Callable[[Trajectory, Callable[[str], str], dict[str, Any]], Iterator[dict[str, Any]]]

EXPORTERS: dict[str, tuple[SampleFn, str]] = {
    "guilibra-sft": (guilibra.sft, "GUI-Libra SFT conversations (<think>/<answer>, reasoning + direct 1:1)"),
    "guilibra-rl": (guilibra.rl, "GUI-Libra RL ground truth per step (0–1000 grid, gt_bbox)"),
    "aguvis": (aguvis.conversations, "AGUVIS-style conversations (thought + pyautogui code, 0–1)"),
    "jsonl": (plain.steps, "plain JSONL, one step per line, pixel points, images/ folder"),
}
