"""Plain JSONL + images folder: one line per step, pixel coordinates, every field a reader needs spelled out.

The keys are the canonical ones ``trajforge import jsonl`` reads, so this export round-trips. Points are
screenshot pixels (``coord_convention: "pixels"``) with the 0–1000 form alongside for convenience.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from schemas import Trajectory


def steps(traj: Trajectory, image_ref: Callable[[str], str], options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for step in traj.steps:
        a, obs = step.action, step.observation
        row: dict[str, Any] = {
            "episode_id": traj.id,
            "step": step.index,
            "goal": traj.task.instruction,
            "step_instruction": step.instruction,
            "reasoning": step.reasoning,
            "image": image_ref(obs.screenshot_sha256),
            "image_width": obs.width,
            "image_height": obs.height,
            "coord_convention": "pixels",
            "action_type": a.type,
            "button": a.button,  # only for right / middle clicks (left is the default)
            "clicks": a.clicks,  # only for double / triple clicks
            "point": [a.x, a.y] if a.point else None,
            "point_norm1000": [a.x_norm, a.y_norm] if a.point else None,
            "point2": [a.x2, a.y2] if a.x2 is not None else None,
            "bbox": list(a.target_bbox.as_tuple()) if a.target_bbox else None,
            "text": a.text,
            "direction": a.direction,
            "key": a.key,
            "app": a.app,
            "target_element_id": a.target_element_id,
            "app_id": traj.app_id,
            "platform": traj.platform,
            "source_ids": [f"{traj.lineage.source}:{s}" for s in traj.lineage.source_ids] or [traj.id],
        }
        yield {k: v for k, v in row.items() if v is not None}
