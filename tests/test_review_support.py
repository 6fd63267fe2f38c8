"""Builders shared by the review tests (no tests here): a real dataset version of Parquet sample shards.

The version mirrors the curation layout (``vNNNN/data/*.parquet``, ``rejects/*.parquet``, ``manifest.json``)
and holds every overlay shape (click with target box, long press, swipe, scroll, typed text), varied judge
scores, and optionally hostile crawled text (script tags, HTML, event handlers) in every text field.
"""

from __future__ import annotations

import json
from pathlib import Path

import factories as f
from schemas import Action, BBox, BlobStore, Reject, Step, Task, Trajectory, samples_from_trajectory
from schemas.base import stable_id
from schemas.recordio import write_parquet

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss=2">'
HOSTILE_TASK = f"Add a note {XSS} about groceries"
W, H = 1280, 720


def actions() -> list[Action]:
    box = BBox(x1=40, y1=100, x2=240, y2=180)
    return [
        Action(type="click", x=140, y=140, image_width=W, image_height=H, target_bbox=box),
        Action(type="type", text="milk and eggs", x=600, y=300, image_width=W, image_height=H),
        Action(type="swipe", x=640, y=600, x2=640, y2=200, image_width=W, image_height=H),
        Action(type="long_press", x=300, y=400, image_width=W, image_height=H),
        Action(type="scroll", direction="down"),
    ]


def trajectory(store: BlobStore, seed: int, n_steps: int = 3, hostile: bool = False, judge: float = 4.0,
               app_id: str = "demo-notes") -> Trajectory:
    acts = actions()
    steps = []
    for i in range(n_steps):
        obs = f.observation(store, seed * 100 + i)
        text = f"Do step {i} of {seed}"
        reasoning = f"The screen shows the list; step {i} moves toward the goal."
        if hostile:
            text, reasoning = f"{text} {XSS}", f"{reasoning} </textarea>{XSS}"
        steps.append(Step(index=i, observation=obs, action=acts[(seed + i) % len(acts)], instruction=text,
                          reasoning=reasoning))
    task = HOSTILE_TASK if hostile else f"Add a note about groceries #{seed}"
    return Trajectory(id=stable_id("review-traj", seed), task=Task(id=stable_id("task", seed), instruction=task,
                      app_id=app_id), steps=steps, app_id=app_id, app_version="1.0", platform="web",
                      scores={"judge": judge})


def build_version(root: Path, n_traj: int = 4, n_steps: int = 3, hostile: bool = False, embed: bool = True,
                  name: str = "v0001") -> Path:
    """A dataset version under ``root/name`` with two data shards and one gate reject; returns its path."""
    store = BlobStore(root / "blobs")
    version = root / name
    samples = []
    for t in range(n_traj):
        traj = trajectory(store, t, n_steps, hostile=hostile, judge=1.0 + t,
                          app_id="demo-notes" if t % 2 == 0 else "demo-settings")
        samples.extend(samples_from_trajectory(traj, store.get if embed else None))
    half = len(samples) // 2
    write_parquet(samples[:half], version / "data" / "part-00000.parquet", "sample")
    write_parquet(samples[half:], version / "data" / "part-00001.parquet", "sample")
    refused = next(samples_from_trajectory(trajectory(store, 99, 1, hostile=hostile), store.get))
    write_parquet([Reject(record_id=refused.id, stage="bbox_check", reason="point_outside_bbox",
                          detail="x 1400 > width 1280", payload=refused.model_dump_json())],
                  version / "rejects" / "bbox_check.parquet", "reject")
    (version / "manifest.json").write_text(json.dumps({"dataset": "demo", "version": name}), encoding="utf-8")
    return version
