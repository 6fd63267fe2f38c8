"""Builders shared by the review tests (no tests here): a real dataset version of Parquet sample shards.

The version mirrors the curation layout (``vNNNN/data/*.parquet``, ``rejects/*.parquet``, ``manifest.json``)
and holds every overlay shape (click with target box, long press, swipe, scroll, typed text), varied judge
scores, and optionally hostile crawled text (script tags, HTML, event handlers) in every text field.
"""

from __future__ import annotations

import json
from pathlib import Path

import factories as f
from schemas import Action, BBox, BlobStore, Lineage, Reject, Step, Task, Trajectory, samples_from_trajectory
from schemas.base import stable_id
from schemas.recordio import write_parquet

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss=2">'
HOSTILE_TASK = f"Add a note {XSS} about groceries"
W, H = 1280, 720


PHONE = (390, 844)  # a phone screenshot: taller than a desktop window once scaled to a column's width


def actions(w: int = W, h: int = H) -> list[Action]:
    sx, sy = w / W, h / H
    box = BBox(x1=40 * sx, y1=100 * sy, x2=240 * sx, y2=180 * sy)
    return [
        Action(type="click", x=140 * sx, y=140 * sy, image_width=w, image_height=h, target_bbox=box),
        Action(type="type", text="milk and eggs", x=600 * sx, y=300 * sy, image_width=w, image_height=h),
        Action(type="swipe", x=640 * sx, y=600 * sy, x2=640 * sx, y2=200 * sy, image_width=w, image_height=h),
        Action(type="long_press", x=300 * sx, y=400 * sy, image_width=w, image_height=h),
        Action(type="scroll", direction="down"),
    ]


def phone_click(y_frac: float = 0.9) -> Action:
    """A tap near the bottom of a phone screen: the case where a stretched screenshot hid the marker."""
    w, h = PHONE
    return Action(type="click", x=195, y=round(h * y_frac), image_width=w, image_height=h,
                  target_bbox=BBox(x1=95, y1=round(h * y_frac) - 30, x2=295, y2=round(h * y_frac) + 30))


def trajectory(store: BlobStore, seed: int, n_steps: int = 3, hostile: bool = False, judge: float = 4.0,
               app_id: str = "demo-notes", size: tuple[int, int] = (W, H), recovery_step: int | None = None,
               negative: bool = False) -> Trajectory:
    w, h = size
    acts = actions(w, h) if size == (W, H) else [phone_click(0.9), phone_click(0.5), phone_click(0.95)]
    steps = []
    for i in range(n_steps):
        obs = f.observation(store, seed * 100 + i, width=w, height=h)
        text = f"Do step {i} of {seed}"
        reasoning = f"The screen shows the list; step {i} moves toward the goal."
        if hostile:
            text, reasoning = f"{text} {XSS}", f"{reasoning} </textarea>{XSS}"
        steps.append(Step(index=i, observation=obs, action=acts[(seed + i) % len(acts)], instruction=text,
                          reasoning=reasoning, train_target=i != recovery_step))
    task = HOSTILE_TASK if hostile else f"Add a note about groceries #{seed}"
    return Trajectory(id=stable_id("review-traj", seed), task=Task(id=stable_id("task", seed), instruction=task,
                      app_id=app_id), steps=steps, app_id=app_id, app_version="1.0",
                      platform="android" if size == PHONE else "web", scores={"judge": judge},
                      lineage=Lineage(source="crawl", negative=negative))


def build_version(root: Path, n_traj: int = 4, n_steps: int = 3, hostile: bool = False, embed: bool = True,
                  name: str = "v0001", phone: int = 0, flagged: bool = False) -> Path:
    """A dataset version under ``root/name`` with two data shards and one gate reject; returns its path.

    ``phone`` adds that many phone-sized (390×844) trajectories of app ``demo-phone`` (judged lowest, so they
    come first in the lowest-score queue); ``flagged`` adds a recovery trajectory (its step 1 is the
    deliberate mistake) and a noise copy.
    """
    store = BlobStore(root / "blobs")
    version = root / name
    samples = []
    for t in range(n_traj):
        traj = trajectory(store, t, n_steps, hostile=hostile, judge=1.0 + t,
                          app_id="demo-notes" if t % 2 == 0 else "demo-settings")
        samples.extend(samples_from_trajectory(traj, store.get if embed else None))
    for t in range(phone):
        traj = trajectory(store, 50 + t, n_steps, hostile=hostile, judge=0.1 + t / 10, app_id="demo-phone",
                          size=PHONE)
        samples.extend(samples_from_trajectory(traj, store.get if embed else None))
    if flagged:
        for seed, kw in ((70, {"recovery_step": 1}), (71, {"negative": True})):
            traj = trajectory(store, seed, n_steps, judge=9.0, app_id="demo-notes", **kw)
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
